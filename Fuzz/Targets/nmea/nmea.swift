import FuzzSupport
import WhereaboutsCore
import WhereaboutsProviders

/// The NMEA path of a live receiver and of a recording: bytes cut into lines in chunks of varying size, each line
/// decoded and assembled into fixes and skies; then the same bytes read as a recorded track.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNMEA(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var splitter = NMEALineSplitter()
    var assembler = NMEAFixAssembler(provider: .nmea, fallbackDate: WallTime(seconds: 1_700_000_000))
    var sky = NMEASkyAssembler()
    var fixes: [Fix] = []
    // The first byte chooses the chunk size, so that lines cut across reads are exercised too.
    let chunkSize = Int(bytes.first ?? 0) % 17 + 1
    var start = bytes.startIndex
    while start < bytes.endIndex {
        let end = min(start + chunkSize, bytes.endIndex)
        for line in splitter.append(bytes[start..<end]) {
            precondition(line.count <= splitter.maximumLineLength, "the splitter kept an over-long line")
            if let fix = try? assembler.add(line: line) { fixes.append(fix) }
            if let sentence = try? NMEASentence(parsing: line), let satellites = sky.add(sentence) {
                checkSky(satellites)
            }
        }
        start = end
    }
    if let line = splitter.finish(), let fix = try? assembler.add(line: line) { fixes.append(fix) }
    if let fix = assembler.finish() { fixes.append(fix) }
    for fix in fixes { checkFix(fix) }

    if let text = String(validating: bytes, as: UTF8.self), let track = try? Track.parse(text: text, fileName: "fuzz") {
        for fix in track.fixes { checkFix(fix) }
    }
    return 0
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzNMEA) }
    }
#endif
