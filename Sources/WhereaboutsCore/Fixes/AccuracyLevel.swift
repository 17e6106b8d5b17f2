/// GeoClue's accuracy levels, with their wire values.
///
/// The D-Bus properties `org.freedesktop.GeoClue2.Client.RequestedAccuracyLevel` and
/// `org.freedesktop.GeoClue2.Manager.AvailableAccuracyLevel` carry these values as `u`.
/// The values 2, 3 and 7 are unused, as in GeoClue.
public enum AccuracyLevel: UInt32, Sendable, Comparable, CaseIterable {
    case none = 0
    case country = 1
    case city = 4
    case neighborhood = 5
    case street = 6
    case exact = 8

    /// Maps any requested wire value onto the level a client is served at, as GeoClue 2.6 does at `Start`
    /// (`ensure_valid_accuracy_level`): values above `exact` become `exact`, an unused value is rounded down to the
    /// level below it (7 to `street`, 2 and 3 to `country`), and `none` becomes `country`.
    public init(clampingRequested raw: UInt32) {
        self = AccuracyLevel.allCases.last { $0 != .none && $0.rawValue <= raw } ?? .country
    }

    /// The horizontal radius, in metres, that a fix served at this level is never more precise than.
    ///
    /// These are GeoClue's nominal radii (`gclue-location.h`); `exact` imposes no limit.
    public var nominalRadius: Double {
        switch self {
        case .none, .country: 300_000
        case .city: 15_000
        case .neighborhood: 3_000
        case .street: 1_000
        case .exact: 0
        }
    }

    public static func < (lhs: AccuracyLevel, rhs: AccuracyLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}
