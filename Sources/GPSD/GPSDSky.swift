import CGPSD
import WhereaboutsCore
import WhereaboutsProviders

/// The satellites of gpsd's SKY report (`satellites`: `gnssid`, `svid`, `el`, `az`, `ss`, `used`) as the receiver's
/// sky.
///
/// gpsd names a satellite by `gnssid` (0 GPS, 1 SBAS, 2 Galileo, 3 BeiDou, 4 IMES, 5 QZSS, 6 GLONASS, 7 NavIC) and
/// its `svid` there, as u-blox numbers them: SBAS by its PRN (120 to 158), QZSS 1 to 10, GLONASS by its slot. A
/// report without `gnssid` (gpsd before 3.18) has only its one-range `PRN`, read as NMEA's
/// (``NMEASatelliteNumbering``). IMES, which is indoor, not a satellite, is left out.
enum GPSDSky {
    /// The satellites of a SKY report's list, by constellation and id.
    static func satellites(of report: wb_gps_sky) -> [Satellite] {
        var copy = report.satellites
        let count = min(Int(report.count), Int(WB_GPS_MAX_SATELLITES))
        return withUnsafeBytes(of: &copy) { bytes in
            bytes.bindMemory(to: wb_gps_satellite.self).prefix(count).compactMap(satellite)
        }.sorted(by: Satellite.listOrder)
    }

    private static func satellite(_ raw: wb_gps_satellite) -> Satellite? {
        let named: (Constellation, UInt32)?
        if raw.gnssid >= 0, raw.svid >= 0 {
            named = constellation(gnssid: raw.gnssid).map { ($0, UInt32(raw.svid)) }
        } else {
            named = NMEASatelliteNumbering.satellite(number: Int(raw.prn), talker: "GN")
        }
        guard let (constellation, id) = named else { return nil }
        return Satellite(
            constellation: constellation, id: id, elevation: known(raw.elevation),
            azimuth: known(raw.azimuth).map { $0 == 360 ? 0 : $0 }, signalStrength: known(raw.signal),
            usedInFix: raw.used != 0)
    }

    private static func constellation(gnssid: Int32) -> Constellation? {
        switch gnssid {
        case 0: .gps
        case 1: .sbas
        case 2: .galileo
        case 3: .beidou
        case 5: .qzss
        case 6: .glonass
        case 7: .navic
        default: nil
        }
    }

    private static func known(_ value: Double) -> Double? { value.isFinite ? value : nil }
}
