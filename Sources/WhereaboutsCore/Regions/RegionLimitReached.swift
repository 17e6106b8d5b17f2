/// AddRegion refused: the owner has ``Region/limitPerOwner`` regions and the id is new (LimitsExceeded).
public struct RegionLimitReached: Error, Sendable, Equatable, CustomStringConvertible {
    /// Whose regions are full.
    public var owner: RegionOwner

    /// Makes the error for `owner`.
    public init(owner: RegionOwner) { self.owner = owner }

    /// A sentence for the error's message.
    public var description: String {
        "app \(owner.app) already has \(Region.limitPerOwner) regions for user \(owner.user), the most it may have"
    }
}
