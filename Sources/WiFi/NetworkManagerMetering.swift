import DBus
import Loop
import WhereaboutsCore

/// Whether NetworkManager calls the machine's connection metered: its `Metered` property on
/// `org.freedesktop.NetworkManager` (`NM_METERED_YES` or `NM_METERED_GUESS_YES`), read when asked. NetworkManager
/// is never started for it (its owner is looked up first); without NetworkManager, or with an answer that is not
/// a `u`, the connection is taken as not metered, as nothing says it is.
@BusActor
public struct NetworkManagerMetering {
    static let busName = "org.freedesktop.NetworkManager"
    static let managerPath = ObjectPath("/org/freedesktop/NetworkManager")!
    static let timeout = Duration.seconds(5)

    private let peer: PeerCalls

    /// Asks NetworkManager on `connection` (the system bus).
    public init(connection: Connection) {
        peer = PeerCalls(connection: connection, service: "NetworkManager", timeout: Self.timeout)
    }

    /// True when NetworkManager says the connection is metered.
    public func isMetered() async -> Bool {
        let owner: String
        do {
            let reply = try await peer.call(
                "org.freedesktop.DBus", ObjectPath("/org/freedesktop/DBus")!, "org.freedesktop.DBus", "GetNameOwner",
                [.string(Self.busName)])
            guard let unique = reply.first?.string else { return false }
            owner = unique
        } catch {
            return false
        }
        guard let value = try? await peer.property(owner, Self.managerPath, Self.busName, "Metered"),
            let metered = value.uint32
        else { return false }
        return NetworkMetering.isMetered(metered)
    }
}
