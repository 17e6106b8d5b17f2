import CGPSD
import WhereaboutsCore

/// The fixes in one connection's reports, line by line.
///
/// Each line is unpacked by the shim's own strict parser (`wb_parse_report`), never by libgps: libgps 3.22 loops
/// forever on some reports (a DEVICES object with an unknown member, a SKY cut short), so whatever listens on
/// gpsd's port could otherwise freeze the bus thread. A SKY's dilutions of precision go with the TPVs after it, and
/// its satellites, when it lists them, are the receiver's sky (``GPSDSky``). A fix identical to the one before is not
/// passed on: the answer to `?POLL` repeats the latest report when gpsd was between epochs.
package struct GPSDReportReader {
    private var dop = wb_gps_dop(hdop: .nan, vdop: .nan)
    private var pdop = Double.nan
    private var previous: Fix?
    private var sky: [Satellite]?

    /// A reader at the start of a connection.
    package init() {}

    /// The new fix `line` carries; nil when it carries none or the one before again. `receivedAt` stands in for a
    /// missing time.
    package mutating func fix(from line: [UInt8], receivedAt: WallTime) -> Fix? {
        var raw = wb_gps_fix()
        var report = wb_gps_sky()
        let result = line.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) {
                wb_parse_report_sky($0.baseAddress, $0.count, &dop, &report, &raw)
            }
        }
        if result == 2 {
            pdop = report.pdop
            if report.has_satellites != 0 { sky = GPSDSky.satellites(of: report) }
        }
        guard result == 1, var fix = GPSDFix.fix(from: raw, receivedAt: receivedAt) else { return nil }
        fix.pdop = pdop.isFinite && pdop > 0 ? pdop : nil
        defer { previous = fix }
        return fix == previous ? nil : fix
    }

    /// The satellites the last line listed, once.
    package mutating func takeSky() -> [Satellite]? {
        defer { sky = nil }
        return sky
    }
}
