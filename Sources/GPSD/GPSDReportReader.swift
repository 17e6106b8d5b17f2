import CGPSD
import WhereaboutsCore

/// The fixes in one connection's reports, line by line.
///
/// Each line is unpacked by the shim's own strict parser (`wb_parse_report`), never by libgps: libgps 3.22 loops
/// forever on some reports (a DEVICES object with an unknown member, a SKY cut short), so whatever listens on
/// gpsd's port could otherwise freeze the bus thread. A SKY's dilutions of precision go with the TPVs after it. A
/// fix identical to the one before is not passed on: the answer to `?POLL` repeats the latest report when gpsd was
/// between epochs.
package struct GPSDReportReader {
    private var dop = wb_gps_dop(hdop: .nan, vdop: .nan)
    private var previous: Fix?

    /// A reader at the start of a connection.
    package init() {}

    /// The new fix `line` carries; nil when it carries none or the one before again. `receivedAt` stands in for a
    /// missing time.
    package mutating func fix(from line: [UInt8], receivedAt: WallTime) -> Fix? {
        var raw = wb_gps_fix()
        let result = line.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { wb_parse_report($0.baseAddress, $0.count, &dop, &raw) }
        }
        guard result == 1, let fix = GPSDFix.fix(from: raw, receivedAt: receivedAt) else { return nil }
        defer { previous = fix }
        return fix == previous ? nil : fix
    }
}
