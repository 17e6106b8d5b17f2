/// AddRegion refused past a limit, before anything was stored (LimitsExceeded): the owner has
/// ``Region/limitPerOwner`` regions, its user ``Region/limitPerUser`` over all apps, or the service
/// ``Region/limitInAll``, and the id is new.
public struct RegionLimitReached: Error, Sendable, Equatable, CustomStringConvertible {
    /// Which limit was reached.
    public enum Limit: Sendable, Equatable {
        /// ``Region/limitPerOwner``.
        case owner
        /// ``Region/limitPerUser``.
        case user
        /// ``Region/limitInAll``.
        case all
    }

    /// Whose region was refused.
    public var owner: RegionOwner
    /// Which limit it met.
    public var limit: Limit

    /// Makes the error for `owner` at `limit`.
    public init(owner: RegionOwner, limit: Limit = .owner) {
        self.owner = owner
        self.limit = limit
    }

    /// A sentence for the error's message.
    public var description: String {
        switch limit {
        case .owner:
            "app \(owner.app) already has \(Region.limitPerOwner) regions for user \(owner.user), the most it may have"
        case .user:
            "user \(owner.user) already has \(Region.limitPerUser) regions of all apps, the most a user may have"
        case .all: "the service already watches \(Region.limitInAll) regions, the most it keeps"
        }
    }
}
