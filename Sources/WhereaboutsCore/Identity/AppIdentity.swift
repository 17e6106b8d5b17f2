/// Who the system says a caller is: the app its sandbox names, or no sandbox at all.
///
/// Its ``description`` reads `flatpak:<application id>`, `snap:<instance>.<app>` or `unconfined`.
public enum AppIdentity: Sendable, Equatable, CustomStringConvertible {
    /// A Flatpak app, by its application id (`org.gnome.Maps`), read from the systemd scope Flatpak runs it in
    /// (``AppIdentityParsing/flatpakApp(cgroup:)``).
    case flatpak(String)
    /// An app of a snap, by the name snapd gives it in `snap run` and in its security tags, `<instance>.<app>`: the
    /// instance is the snap's name, followed for a parallel install by `_<key>` (`firefox.firefox`,
    /// `firefox_beta.firefox`). snapd installs the app's desktop file as `<instance>_<app>.desktop`. Read from the
    /// connection's AppArmor label (``AppIdentityParsing/snapApp(securityLabel:)``).
    case snap(String)
    /// No sandbox was found: the DesktopId the caller gives is only its claim.
    case unconfined

    /// `flatpak:<id>`, `snap:<instance>.<app>` or `unconfined`.
    public var description: String {
        switch self {
        case .flatpak(let id): "flatpak:\(id)"
        case .snap(let app): "snap:\(app)"
        case .unconfined: "unconfined"
        }
    }
}
