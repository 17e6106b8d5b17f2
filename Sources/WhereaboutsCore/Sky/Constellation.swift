/// A satellite navigation system, as `io.github.whereabouts1.Client.Satellites` names it.
public enum Constellation: String, Sendable, CaseIterable, Comparable {
    case gps = "gps"
    case glonass = "glonass"
    case galileo = "galileo"
    case beidou = "beidou"
    case qzss = "qzss"
    /// India's NavIC (IRNSS).
    case navic = "navic"
    /// The satellite-based augmentation systems (WAAS, EGNOS, MSAS, GAGAN, ...), by their PRN 120 to 158.
    case sbas = "sbas"

    public static func < (lhs: Constellation, rhs: Constellation) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
