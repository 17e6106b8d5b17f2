/// A region's state as the bus reports it (RegionChanged's and ListRegions' `state`).
public enum RegionState: String, Sendable {
    /// Entered: the probability of being inside reached ``RegionRule/entryProbability``.
    case inside
    /// Left, or never entered: the probability fell to ``RegionRule/exitProbability``.
    case outside
    /// Inside for the region's dwell time since the entry.
    case dwelling
    /// Not decided: no fix decided it within ``RegionRule/undecidedTimeout`` of being added, or no provider that
    /// can decide it is available any more.
    case unknown
}

/// Where a watched region stands, as the monitor keeps it: ``RegionState`` with the time before the first
/// report told apart.
enum RegionPhase: String, Sendable, CaseIterable {
    /// Added, and nothing reported yet: no fix decided it and ``RegionRule/undecidedTimeout`` has not passed.
    case undecided
    /// Reported unknown.
    case unknown
    /// Reported inside.
    case inside
    /// Reported dwelling.
    case dwelling
    /// Reported outside.
    case outside

    /// The state the bus shows: an undecided region is unknown.
    var state: RegionState {
        switch self {
        case .undecided, .unknown: .unknown
        case .inside: .inside
        case .dwelling: .dwelling
        case .outside: .outside
        }
    }
}
