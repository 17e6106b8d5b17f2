/// The app a client is served as: whose configuration, grants and regions apply to it, and how the service knows
/// (`io.github.whereabouts1.Client.AppIdentity`).
///
/// Only a sandbox or the desktop portal makes an app verified: a grant stored for a verified app serves no caller
/// that merely claims its id (``GrantStore/decision(uid:app:verified:)``).
public enum ClientApp: Sendable, Equatable, CustomStringConvertible {
    /// A Flatpak app, by its application id from its sandbox's cgroup, whatever `DesktopId` it set.
    case flatpak(String)
    /// A snap's app, by the desktop id snapd installs for it, `<instance>_<app>`, from its AppArmor label.
    case snap(String)
    /// The app the desktop portal, outside any sandbox, names in `DesktopId` as it asks on the app's behalf.
    case portal(String)
    /// The `DesktopId` of a caller outside any sandbox: its own word, which any process of its user could give.
    case claimed(String)

    /// The `DesktopId` the desktop portal gives its client, whichever app it asks for (xdg-desktop-portal 1.16
    /// and later name no app to GeoClue; they keep their own permission per app).
    public static let desktopPortalID = "xdg-desktop-portal"

    /// The app that a caller with `identity` who set `desktopId` is served as; nil for a caller outside any
    /// sandbox that set no `DesktopId`.
    public init?(caller identity: CallerIdentity, desktopId: String?) {
        switch identity.sandbox {
        case .flatpak(let id): self = .flatpak(id)
        case .snap(let app): self = .snap(AppIdentity.snapDesktopID(app))
        case .unconfined:
            guard let desktopId else { return nil }
            self = identity.isDesktopPortal && !desktopId.isEmpty ? .portal(desktopId) : .claimed(desktopId)
        }
    }

    /// The app id that configuration, grants and regions are kept by.
    public var id: String {
        switch self {
        case .flatpak(let id), .snap(let id), .portal(let id), .claimed(let id): id
        }
    }

    /// True for an app in a sandbox (Flatpak or snap): the apps whose `Start` GeoClue asks the user's agent about.
    public var isSandboxed: Bool {
        switch self {
        case .flatpak, .snap: true
        case .portal, .claimed: false
        }
    }

    /// True when the system vouches for the id: a sandbox's, or the portal's.
    public var isVerified: Bool {
        if case .claimed = self { return false }
        return true
    }

    /// How the service knows the app: `flatpak`, `snap`, `portal` or `claimed` (polkit's detail `identity`).
    public var source: String {
        switch self {
        case .flatpak: "flatpak"
        case .snap: "snap"
        case .portal: "portal"
        case .claimed: "claimed"
        }
    }

    /// `flatpak:ID`, `snap:ID`, `portal:ID` or `claimed:ID`.
    public var description: String {
        "\(source):\(id)"
    }
}

extension AppIdentity {
    /// The desktop id snapd installs for the snap app `<instance>.<app>`: `<instance>_<app>`.
    static func snapDesktopID(_ app: String) -> String {
        guard let dot = app.firstIndex(of: ".") else { return app }
        return app[..<dot] + "_" + app[app.index(after: dot)...]
    }
}
