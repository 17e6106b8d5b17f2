/// ModemManager's location sources (`MMModemLocationSource`), the bits of `org.freedesktop.ModemManager1.Modem.Location`'s
/// `Capabilities`, `Enabled` and `Setup`, and the keys of its `Location` dictionary.
public struct ModemLocationSources: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The `MMModemLocationSource` bits.
    public let rawValue: UInt32

    /// The sources of the bits in `rawValue`.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The serving cell, `MCC,MNC,LAC,CI,TAC` (`MM_MODEM_LOCATION_SOURCE_3GPP_LAC_CI`, 1 << 0).
    public static let threeGPPCell = ModemLocationSources(rawValue: 1 << 0)
    /// The GNSS receiver's fix as a dictionary (`MM_MODEM_LOCATION_SOURCE_GPS_RAW`, 1 << 1).
    public static let gpsRaw = ModemLocationSources(rawValue: 1 << 1)
    /// The GNSS receiver's NMEA sentences (`MM_MODEM_LOCATION_SOURCE_GPS_NMEA`, 1 << 2).
    public static let gpsNMEA = ModemLocationSources(rawValue: 1 << 2)
    /// The CDMA base station's position (`MM_MODEM_LOCATION_SOURCE_CDMA_BS`, 1 << 3).
    public static let cdmaBaseStation = ModemLocationSources(rawValue: 1 << 3)

    /// Assisted GNSS, the position computed by the network (`MM_MODEM_LOCATION_SOURCE_AGPS_MSA`, 1 << 5).
    public static let agpsMSA = ModemLocationSources(rawValue: 1 << 5)
    /// Assisted GNSS, the position computed by the modem (`MM_MODEM_LOCATION_SOURCE_AGPS_MSB`, 1 << 6).
    public static let agpsMSB = ModemLocationSources(rawValue: 1 << 6)
    /// The assisted-GNSS sources, one of which a modem needs to take a SUPL server.
    public static let agps: ModemLocationSources = [.agpsMSA, .agpsMSB]

    /// The sources of the GNSS receiver, which `SetGpsRefreshRate` paces.
    public static let gps: ModemLocationSources = [.gpsRaw, .gpsNMEA]

    /// `mmcli`'s names of the sources (`3gpp-lac-ci, gps-nmea`); `none` for none; other bits as one hexadecimal
    /// value.
    public var description: String {
        if rawValue == 0 { return "none" }
        var names = Self.names.filter { contains($0.source) }.map(\.name)
        let undefined = rawValue & ~Self.names.reduce(0) { $0 | $1.source.rawValue }
        if undefined != 0 { names.append("0x" + String(undefined, radix: 16)) }
        return names.joined(separator: ", ")
    }

    private static let names: [(source: ModemLocationSources, name: String)] = [
        (.threeGPPCell, "3gpp-lac-ci"), (.gpsRaw, "gps-raw"), (.gpsNMEA, "gps-nmea"), (.cdmaBaseStation, "cdma-bs"),
        (.agpsMSA, "agps-msa"), (.agpsMSB, "agps-msb"),
    ]
}
