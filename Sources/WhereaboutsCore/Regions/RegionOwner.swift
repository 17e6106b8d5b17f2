/// Who owns regions: a Unix user and an app, verified or claimed (``ClientApp``).
///
/// Regions belong to the owner, not to a connection: they are watched while no client of the app runs, and every
/// client of the app for the user sees them. A verified app's regions are its own: a caller merely claiming its
/// id sees other regions, those of the claimed id.
public struct RegionOwner: Hashable, Sendable, Comparable {
    /// The Unix user id of the app's clients.
    public var user: UInt32
    /// The app's id.
    public var app: String
    /// True when the system vouched for the app (``ClientApp/isVerified``).
    public var verified: Bool

    /// The owner `app` of `user`, verified or claimed.
    public init(user: UInt32, app: String, verified: Bool = false) {
        self.user = user
        self.app = app
        self.verified = verified
    }

    /// By user, then by app, claimed before verified.
    public static func < (lhs: RegionOwner, rhs: RegionOwner) -> Bool {
        (lhs.user, lhs.app, lhs.verified ? 1 : 0) < (rhs.user, rhs.app, rhs.verified ? 1 : 0)
    }
}
