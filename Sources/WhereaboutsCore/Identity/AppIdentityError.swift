/// Why the system's word on a caller's app cannot be read: a sandbox is there, but what it says is not an app's
/// name, or says two things. The caller is neither the app named nor unconfined, and is best refused.
public struct AppIdentityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public enum Problem: Sendable, Equatable, CustomStringConvertible {
        /// A Flatpak scope whose name is not `app-flatpak-<escaped id>-<pid>.scope`: no pid after the id, or a
        /// backslash that is not a `\xNN` escape.
        case malformedFlatpakScope(scope: String)
        /// A Flatpak scope whose id is not a valid application id (``AppIdentityParsing/isValidApplicationID(_:)``).
        case invalidFlatpakID(String, scope: String)
        /// One cgroup path has two Flatpak scopes, of different apps.
        case nestedFlatpakScopes(outer: String, inner: String)
        /// The systemd hierarchies (`unified`, `name=systemd`) put the process in different Flatpak apps, or in
        /// one and in none; `nil` is none.
        case hierarchiesDisagree(first: String, firstApp: String?, second: String, secondApp: String?)
        /// The AppArmor label is a snap's hook (`snap.<instance>.hook.<hook>`): confined by the snap, but no app.
        case snapHook(label: String)
        /// The AppArmor label is in snapd's namespace (`snap.`) but is not the label of a snap's app.
        case invalidSnapLabel(String)
        /// The security label has a NUL byte before its end.
        case nulInLabel
        /// The cgroup puts the process in a Flatpak app, and its security label or scope in a snap's.
        case twoSandboxes(flatpak: String, snap: String)
        /// The systemd hierarchies put the process in different snap apps' scopes, or in one and in none.
        case snapScopesDisagree(first: String?, second: String?)
        /// The security label names one snap app and the scope another.
        case snapLabelAndScopeDisagree(label: String, scope: String)

        /// A human explanation.
        public var description: String {
            switch self {
            case .malformedFlatpakScope(let scope):
                "the Flatpak scope \(shown(scope)) is not named app-flatpak-<application id>-<pid>.scope"
            case .invalidFlatpakID(let id, let scope):
                "the Flatpak scope \(shown(scope)) names \(shown(id)), which is not a valid application id"
            case .nestedFlatpakScopes(let outer, let inner):
                "the cgroup has the Flatpak scope \(shown(inner)) inside \(shown(outer)), of another app"
            case .hierarchiesDisagree(let first, let firstApp, let second, let secondApp):
                "the cgroup hierarchies disagree: \(first) puts the process in \(app(firstApp)), \(second) in "
                    + app(secondApp)
            case .snapHook(let label):
                "the security label \(shown(label)) is a snap's hook, not an app"
            case .invalidSnapLabel(let label):
                "the security label \(shown(label)) is in snapd's namespace but is not the label of a snap's app"
            case .nulInLabel:
                "the security label has a NUL byte before its end"
            case .twoSandboxes(let flatpak, let snap):
                "the process is in Flatpak app \(shown(flatpak)) and in snap app \(shown(snap)) at once"
            case .snapScopesDisagree(let first, let second):
                "the cgroup hierarchies put the process in \(snap(first)) and in \(snap(second))"
            case .snapLabelAndScopeDisagree(let label, let scope):
                "the security label names snap app \(shown(label)), the cgroup snap app \(shown(scope))"
            }
        }

        /// `text` quoted, cut to 80 characters.
        private func shown(_ text: String) -> String {
            "'" + (text.count > 80 ? text.prefix(80) + "…" : text) + "'"
        }

        /// "snap app '<app>'" or "no snap app".
        private func snap(_ app: String?) -> String {
            app.map { "snap app \(shown($0))" } ?? "no snap app"
        }

        /// "Flatpak app '<id>'" or "no Flatpak app".
        private func app(_ id: String?) -> String {
            id.map { "Flatpak app \(shown($0))" } ?? "no Flatpak app"
        }
    }

    /// What is wrong.
    public var problem: Problem

    /// Makes an error.
    public init(_ problem: Problem) {
        self.problem = problem
    }

    /// The problem's explanation.
    public var description: String { problem.description }
}
