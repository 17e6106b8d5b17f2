/// Everything one user keeps in the region monitor, by owner and id: what the user's own regions file holds
/// (``RegionMonitor/records(ofUser:)``, ``RegionFile/serialize(_:)``).
public struct RegionUserRecords: Sendable {
    /// The user.
    public let user: UInt32
    /// The user's regions, by owner and id.
    let watches: [RegionWatch]
    /// The user's pending events, by owner, each owner's oldest first.
    let pending: [(owner: RegionOwner, events: [RegionEvent])]

    /// True when the user keeps nothing: its file goes.
    public var isEmpty: Bool { watches.isEmpty && pending.isEmpty }

    /// How many regions the user keeps.
    public var regionCount: Int { watches.count }
}
