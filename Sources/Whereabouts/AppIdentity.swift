import DBus
import Loop
import WhereaboutsCore

/// Who the service takes the calling process for (`io.github.whereabouts1.Client.AppIdentity` and `DesktopHint`).
public struct AppIdentity: Sendable, Equatable {
    /// How the service knows the app.
    public enum Source: String, Sendable {
        /// The Flatpak sandbox the process runs in.
        case flatpak
        /// The snap whose AppArmor label confines the process.
        case snap
        /// The desktop portal, asking on the app's behalf.
        case portal
        /// Only the `DesktopId` the process set: its own word.
        case claimed
    }

    /// How the service knows the app.
    public var source: Source
    /// The app id whose configuration, grants and regions apply.
    public var id: String
    /// The desktop file the process's systemd user unit is named after, shown only, never used to grant.
    public var desktopHint: String?

    /// True when the system vouches for the id (every source but ``Source/claimed``).
    public var isVerified: Bool { source != .claimed }

    /// Reads `flatpak:ID`, `snap:ID`, `portal:ID` or `claimed:ID`.
    init?(_ text: String, desktopHint: String) {
        guard let colon = text.firstIndex(of: ":"), let source = Source(rawValue: String(text[..<colon])) else {
            return nil
        }
        self.source = source
        id = String(text[text.index(after: colon)...])
        self.desktopHint = desktopHint.isEmpty ? nil : desktopHint
    }

    /// `flatpak:ID`, as the service says it.
    public var description: String { "\(source.rawValue):\(id)" }
}

extension LocationManager {
    /// Who the service takes this process for, asking as the app `desktopId` (a sandboxed process is its sandbox's
    /// app whatever it says). Whereabouts only.
    public func appIdentity() async throws(LocationError) -> AppIdentity {
        guard try await isWhereabouts() else { throw .unsupported("app identity") }
        let client = try await makeClient(accuracy: .exact)
        defer { deleteClient(client) }
        let properties = try await getAll(client, Self.client)
        guard let text = properties["AppIdentity"]?.string,
            let identity = AppIdentity(text, desktopHint: properties["DesktopHint"]?.string ?? "")
        else {
            throw .other(name: "", message: "the service named no app identity")
        }
        return identity
    }
}
