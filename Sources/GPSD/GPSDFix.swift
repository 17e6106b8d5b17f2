import CGPSD
import WhereaboutsCore

/// Turns gpsd's reports into fixes.
enum GPSDFix {
    /// The user equivalent range error assumed when only a dilution of precision is known, in metres (1σ).
    static let rangeError = 4.0
    /// From a 1σ figure to a 95% horizontal radius (2DRMS for a circular error): 2 × √(1/2)·√2 ≈ 1.73 per axis
    /// of DOP, the same model as the NMEA parser's.
    static let horizontalFactor = 1.73
    /// From a 1σ vertical figure to 95%.
    static let verticalFactor = 1.96

    /// The fix in a report, or nil when it has no usable position. `receivedAt` stands in for a missing time.
    static func fix(from raw: wb_gps_fix, receivedAt: WallTime) -> Fix? {
        guard raw.mode >= 2, raw.latitude.isFinite, raw.longitude.isFinite, abs(raw.latitude) <= 90,
            abs(raw.longitude) <= 180
        else { return nil }
        let timestamp =
            raw.time_seconds > 0 && raw.time_seconds < Int64.max / 1_000_000 - 1
                && (0..<1_000_000_000).contains(raw.time_nanoseconds)
            ? WallTime(microseconds: raw.time_seconds * 1_000_000 + raw.time_nanoseconds / 1_000) : receivedAt
        return Fix(
            latitude: raw.latitude, longitude: raw.longitude,
            horizontalAccuracy: horizontalAccuracy(raw),
            altitude: known(raw.altitude_msl), ellipsoidalAltitude: known(raw.altitude_hae),
            verticalAccuracy: positive(raw.epv) ?? positive(raw.vdop).map { $0 * rangeError * verticalFactor },
            speed: known(raw.speed).map { max(0, $0) }, speedAccuracy: positive(raw.eps),
            course: known(raw.track).map { $0.truncatingRemainder(dividingBy: 360) }, courseAccuracy: positive(raw.epd),
            climb: known(raw.climb), climbAccuracy: positive(raw.epc), fixType: fixType(raw),
            hdop: positive(raw.hdop), vdop: positive(raw.vdop), timestamp: timestamp, provider: .gpsd,
            description: raw.mode >= 3 ? "gpsd 3D fix" : "gpsd 2D fix")
    }

    /// TPV's `status` where it says DGPS (2), RTK fixed (3) or RTK float (4); otherwise its `mode`, 2D or 3D.
    static func fixType(_ raw: wb_gps_fix) -> FixType {
        switch (raw.status, raw.mode) {
        case (2, _): .differential
        case (3, _): .rtkFixed
        case (4, _): .rtkFloat
        case (_, 3): .threeDimensional
        default: .twoDimensional
        }
    }

    /// gpsd's 95% `eph`; else the 95% longitude and latitude errors combined; else from HDOP; else HDOP 2.
    static func horizontalAccuracy(_ raw: wb_gps_fix) -> Double {
        if let eph = positive(raw.eph) { return eph }
        if let x = positive(raw.epx), let y = positive(raw.epy) { return (x * x + y * y).squareRoot() }
        return (positive(raw.hdop) ?? 2) * rangeError * horizontalFactor
    }

    private static func known(_ value: Double) -> Double? { value.isFinite ? value : nil }
    private static func positive(_ value: Double) -> Double? { value.isFinite && value > 0 ? value : nil }
}
