import CGPSD
import Glibc
import Testing

/// The shim frames and reads gpsd's reports itself: libgps 3.22 loops forever on some reports, malformed and valid
/// (found by the gpsd fuzz target, `Fuzz/known-hangs/gpsd`).
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

    /// A listening loopback socket and its port.
    static func listener() throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        try #require(bound)
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    @Test func aReportThatWouldHangLibgpsIsPassedOverAndTheNextOneRead() throws {
        let server = try Self.listener()
        defer { close(server.fd) }
        var error: UnsafePointer<CChar>? = nil
        let gps = try #require(wb_gps_open("127.0.0.1", String(server.port), &error))
        defer { wb_gps_close(gps) }
        let peer = accept(server.fd, nil, nil)
        try #require(peer >= 0)
        let stream =
            Self.libgpsLoop + "\r\n" + Self.libgpsLoopOnValidJSON + "\n" + String(repeating: "x", count: 40_000)
            + "\n" + Self.tpv + "\r\n"
        var bytes = Array(stream.utf8)
        #expect(send(peer, &bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count)
        var fix = wb_gps_fix()
        var results: [Int32] = []
        while results.count < 50, results.last != 1 {
            _ = wb_gps_wait(gps, 500_000)
            results.append(wb_gps_read(gps, &fix))
        }
        #expect(results.last == 1, "\(results)")
        #expect(fix.latitude == 46.5 && fix.longitude == 7.25)
        #expect(!results.contains(-1))
        close(peer)
        while results.last != -1 && results.count < 100 {
            _ = wb_gps_wait(gps, 500_000)
            results.append(wb_gps_read(gps, &fix))
        }
        #expect(results.last == -1, "the end of the stream is seen: \(results)")
    }
}
