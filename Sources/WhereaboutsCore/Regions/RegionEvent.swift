/// A change of a region's state to report: a RegionChanged signal, or an entry of the owner's pending events
/// while no client of the owner exists.
///
/// Only the monitor makes them (``RegionMonitor/observe(_:coarsened:approximate:)``,
/// ``RegionMonitor/timePassed(now:)``, ``RegionMonitor/undecidable(now:)``).
public struct RegionEvent: Sendable, Equatable {
    /// Whose region changed.
    public var owner: RegionOwner
    /// The region's id.
    public var id: String
    /// The new state.
    public var state: RegionState
    /// The fix that decided the state (the coarsened one for an approximate grant; for dwelling reached with no
    /// fix, the fix of the entry); nil for ``RegionState/unknown``.
    public var fix: RegionFix?
    /// When the state changed: the deciding fix's timestamp, or the time at which the dwell time or the undecided
    /// timeout ran out, or the time the regions became undecidable.
    public var timestamp: WallTime
}

/// Regions the service stopped watching by itself: a RegionsRemoved signal.
public struct RegionRemoval: Sendable, Equatable {
    /// Why the regions were removed (RegionsRemoved's `reason`).
    public enum Reason: String, Sendable {
        /// Their expiry came.
        case expired
        /// The owner's grant was revoked.
        case authorisationRevoked = "authorisation-revoked"
    }

    /// Whose regions were removed.
    public var owner: RegionOwner
    /// The ids removed, sorted.
    public var ids: [String]
    /// Why.
    public var reason: Reason

    /// Makes a removal.
    public init(owner: RegionOwner, ids: [String], reason: Reason) {
        self.owner = owner
        self.ids = ids
        self.reason = reason
    }
}

/// One region as ListRegions shows it.
public struct RegionRecord: Sendable, Equatable {
    /// The region as added.
    public var region: Region
    /// Its state; unknown before the first decision.
    public var state: RegionState
    /// The timestamp of the fix that decided the state; nil before any, and while unknown.
    public var since: WallTime?
}
