import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// The lines of `chunks` as strings, with what `finish()` returns appended.
private func split(_ chunks: [[UInt8]], maximumLineLength: Int = NMEASentence.maximumLength) -> (
    lines: [String], discarded: Int
) {
    var splitter = NMEALineSplitter(maximumLineLength: maximumLineLength)
    var lines = chunks.flatMap { splitter.append($0) }
    if let last = splitter.finish() { lines.append(last) }
    return (lines.map { String(decoding: $0, as: UTF8.self) }, splitter.discardedLineCount)
}

@Suite("NMEA line splitting")
struct NMEALineSplitterTests {
    static let sentences = [
        NMEAFixture.gga("120000"), NMEAFixture.gsa(), NMEAFixture.rmc("120000"), NMEAFixture.gga("120001"),
        NMEAFixture.gst("120001"),
        NMEAFixture.rmc("120001"),
    ]

    @Test func splitsOnAnyLineTerminatorAndSkipsEmptyLines() {
        let stream = "$A*00\r\n$B*00\n$C*00\r\r\n\n$D*00"
        #expect(split([Array(stream.utf8)]).lines == ["$A*00", "$B*00", "$C*00", "$D*00"])
    }

    @Test func reassemblesSentencesSplitAtRandomPlaces() throws {
        let stream = Array(Self.sentences.map { $0 + "\r\n" }.joined().utf8)
        var random = SeededGenerator(state: 7)
        for _ in 0..<500 {
            var chunks: [[UInt8]] = []
            var start = 0
            while start < stream.count {
                let end = min(stream.count, start + Int.random(in: 0...40, using: &random))
                chunks.append(Array(stream[start..<end]))
                start = end
            }
            #expect(split(chunks).lines == Self.sentences)
        }
    }

    @Test func assemblerGivesTheSameFixesWhateverTheChunking() throws {
        let stream = Array(Self.sentences.map { $0 + "\r\n" }.joined().utf8)
        let expected = try assembleFixes(Self.sentences)
        #expect(expected.count == 2)
        var random = SeededGenerator(state: 11)
        for _ in 0..<100 {
            var splitter = NMEALineSplitter()
            var assembler = NMEAFixAssembler(provider: .nmea)
            var fixes: [Fix] = []
            var start = 0
            while start < stream.count {
                let end = min(stream.count, start + Int.random(in: 1...17, using: &random))
                for line in splitter.append(stream[start..<end]) {
                    if let fix = try assembler.add(line: line) { fixes.append(fix) }
                }
                start = end
            }
            if let fix = assembler.finish() { fixes.append(fix) }
            #expect(fixes == expected)
        }
    }

    @Test func startsANewLineAtEveryDollar() {
        let stream = "$GPGGA,1200$GPRMC,x*00\nnoise$GPGSA*00\n"
        #expect(split([Array(stream.utf8)]).lines == ["$GPGGA,1200", "$GPRMC,x*00", "noise", "$GPGSA*00"])
    }

    @Test func discardsOverlongLinesAndResynchronizes() {
        let garbage = [UInt8](repeating: UInt8(ascii: "x"), count: 10_000)
        let good = Array((NMEAFixture.gga("120000") + "\r\n").utf8)
        let result = split([good, garbage, good, garbage, Array("\n".utf8), good, [UInt8](repeating: 0, count: 500)])
        let sentence = NMEAFixture.gga("120000")
        #expect(result.lines == [sentence, sentence, sentence])
        #expect(result.discarded == 3)
    }

    @Test func keepsLinesOfExactlyTheMaximumLength() {
        let exact = "$" + String(repeating: "A", count: 9)
        #expect(split([Array((exact + "\n").utf8)], maximumLineLength: 10) == ([exact], 0))
        #expect(split([Array((exact + "B\n" + exact + "\n").utf8)], maximumLineLength: 10) == ([exact], 1))
    }

    @Test func boundsItsBufferAgainstEndlessInput() {
        var splitter = NMEALineSplitter()
        let chunk = [UInt8](repeating: UInt8(ascii: "7"), count: 4096)
        for _ in 0..<1000 { #expect(splitter.append(chunk).isEmpty) }
        #expect(splitter.discardedLineCount == 1)
        #expect(splitter.finish() == nil)
    }

    @Test func passesBinaryGarbageOnForTheDecoderToReject() throws {
        let stream: [UInt8] =
            [0x00, 0xFF, 0x24, 0x47, 0x00, 0x2A, 0x30, 0x30, 0x0A] + Array((NMEAFixture.gga("120000") + "\n").utf8)
        var splitter = NMEALineSplitter()
        let lines = splitter.append(stream)
        #expect(lines.count == 3)
        #expect(throws: NMEAError.missingStartDelimiter) { try NMEASentence(parsing: lines[0]) }
        #expect(throws: NMEAError.invalidCharacter(byte: 0, offset: 2)) { try NMEASentence(parsing: lines[1]) }
        _ = try NMEASentence(parsing: lines[2])
    }
}
