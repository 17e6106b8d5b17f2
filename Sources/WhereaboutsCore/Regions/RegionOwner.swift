/// Who owns regions: a Unix user and an app id (DesktopId).
///
/// Regions belong to the pair, not to a connection: they are watched while no client of the app runs, and every
/// client of the app for the user sees them.
public struct RegionOwner: Hashable, Sendable, Comparable {
    /// The Unix user id of the app's clients.
    public var user: UInt32
    /// The app's desktop id.
    public var app: String

    /// The owner `app` of `user`.
    public init(user: UInt32, app: String) {
        self.user = user
        self.app = app
    }

    /// By user, then by app.
    public static func < (lhs: RegionOwner, rhs: RegionOwner) -> Bool { (lhs.user, lhs.app) < (rhs.user, rhs.app) }
}
