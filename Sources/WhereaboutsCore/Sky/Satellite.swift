/// One satellite a receiver sees: an entry of `io.github.whereabouts1.Client.Satellites` (`(sudddb)`).
public struct Satellite: Sendable, Hashable {
    /// The system it belongs to.
    public var constellation: Constellation
    /// Its id within ``constellation``: the PRN for GPS (1–32), SBAS (120–158), Galileo, BeiDou, QZSS (1–10) and
    /// NavIC; the slot for GLONASS (1–32, or a frequency channel's number where the receiver gives no slot).
    public var id: UInt32
    /// Degrees above the horizon, in -90...90; nil while the receiver does not know where it is.
    public var elevation: Double?
    /// Degrees clockwise from true north, in 0..<360; nil while the receiver does not know where it is.
    public var azimuth: Double?
    /// The carrier-to-noise density in dB-Hz; nil while the satellite is not tracked.
    public var signalStrength: Double?
    /// True when the receiver uses it in its fix.
    public var usedInFix: Bool

    /// A satellite from its fields.
    public init(
        constellation: Constellation, id: UInt32, elevation: Double?, azimuth: Double?, signalStrength: Double?,
        usedInFix: Bool
    ) {
        self.constellation = constellation
        self.id = id
        self.elevation = elevation
        self.azimuth = azimuth
        self.signalStrength = signalStrength
        self.usedInFix = usedInFix
    }

    /// Sorts a sky as `Satellites` lists it: by constellation, then id.
    public static func listOrder(_ lhs: Satellite, _ rhs: Satellite) -> Bool {
        (lhs.constellation, lhs.id) < (rhs.constellation, rhs.id)
    }
}
