import CGPSD
import Testing
import WhereaboutsCore
import WhereaboutsProviders

@testable import GPSD

/// The provider frames gpsd's reports itself and the shim unpacks them, never libgps: libgps 3.22 loops forever on
/// some reports, malformed and valid (found by the gpsd fuzz target, `Fuzz/known-hangs/gpsd`). GPSDProviderTests
/// read them from a socket, and see it end.
@Suite("gpsd report framing", .timeLimit(.minutes(1)))
struct ReportFramingTests {
    /// Inputs on which libgps 3.22's unpacking never returns: malformed, and valid JSON with an unknown member.
    static let libgpsLoop = #"{:"class":"SKY""#
    static let libgpsLoopOnValidJSON = #"{"class":"DEVICES","devicesy":[{"class":"DEVICE","path":"/dev/pts/1"}]}"#
    static let tpv =
        #"{"class":"TPV","device":"/dev/pts/1","mode":2,"time":"2026-11-30T17:14:55.000Z","lat":46.5,"lon":7.25}"#

    /// `wb_parse_report` on `text` with `dop`, and the fix it gave.
    static func parse(_ text: String, _ dop: inout wb_gps_dop) -> (result: Int32, fix: wb_gps_fix) {
        var fix = wb_gps_fix()
        let bytes = Array(text.utf8)
        let result = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { wb_parse_report($0.baseAddress, $0.count, &dop, &fix) }
        }
        return (result, fix)
    }

    @Test func reportsAreReadWithoutLibgps() {
        var dop = wb_gps_dop(hdop: .nan, vdop: .nan)
        let sky = #"{"class":"SKY","device":"/dev/pts/1","hdop":0.9,"vdop":1.4,"satellites":[{"PRN":5,"used":true}]}"#
        #expect(Self.parse(sky, &dop).result == 0)
        #expect(dop.hdop == 0.9 && dop.vdop == 1.4)
        let read = Self.parse(Self.tpv, &dop)
        #expect(read.result == 1)
        #expect(read.fix.latitude == 46.5 && read.fix.longitude == 7.25 && read.fix.mode == 2)
        #expect(read.fix.hdop == 0.9 && read.fix.time_seconds == pollFixSeconds)
        #expect(read.fix.altitude_msl.isNaN, "a 2D fix has no altitude")
        #expect(Self.parse(#"{"class":"TPV","mode":1,"time":"2026-11-30T17:14:55.000Z"}"#, &dop).result == 0)
        #expect(Self.parse(#"{"class":"TPV","mode":2,"lat":46.5,"lon":7.25}"#, &dop).result == 0, "no time")
        #expect(Self.parse(pollBetweenEpochs, &dop).result == 1)
        #expect(Self.parse(#"{"class":"VERSION","release":"3.22","proto_major":3}"#, &dop).result == -1)
    }

    @Test func reportsThatHangLibgpsAreRefused() {
        var dop = wb_gps_dop(hdop: .nan, vdop: .nan)
        for input in [
            Self.libgpsLoop, Self.libgpsLoopOnValidJSON, "", "{", #"{"class":"TPV","mode":2,}"#,
            #"{"class":"TPV","mode":2,"mode":3}"#, String(repeating: "[", count: 100),
        ] {
            #expect(Self.parse(input, &dop).result == -1, "\(input)")
        }
    }

    @Test func aReportThatWouldHangLibgpsIsPassedOverAndTheNextOneRead() {
        let stream =
            Self.libgpsLoop + "\r\n" + Self.libgpsLoopOnValidJSON + "\n" + String(repeating: "x", count: 40_000)
            + "\n" + Self.tpv + "\r\n"
        let bytes = Array(stream.utf8)
        var splitter = GPSDReportSplitter()
        var reader = GPSDReportReader()
        var lines: [[UInt8]] = []
        var fixes: [Fix] = []
        // In pieces, as a socket hands them over.
        for start in stride(from: 0, to: bytes.count, by: 1500) {
            for line in splitter.append(bytes[start..<min(bytes.count, start + 1500)]) {
                lines.append(line)
                if let fix = reader.fix(from: line, receivedAt: WallTime(seconds: 1_700_000_000)) { fixes.append(fix) }
            }
        }
        #expect(lines == [Self.libgpsLoop, Self.libgpsLoopOnValidJSON, Self.tpv].map { Array($0.utf8) })
        #expect(fixes.count == 1)
        #expect(fixes.first?.latitude == 46.5 && fixes.first?.longitude == 7.25)
    }
}
