import DBus
import Loop

/// The Unix user and process of each connection that asked for something, asked of the bus once and remembered
/// while it is connected.
///
/// A connection that goes away while the bus is being asked fails the lookup, so that nothing is created or
/// remembered for it after its clients were dropped.
@BusActor
final class PeerCredentials {
    private let connection: Connection
    private var known: [String: (uid: UInt32, pid: UInt32?)] = [:]
    /// Connections whose credentials are being asked of the bus, and how many times.
    private var lookups: [String: Int] = [:]
    /// Connections that went away while their credentials were being asked.
    private var vanishedDuringLookup: Set<String> = []
    /// Called once with a connection's user, when it is first known.
    var onIdentified: (@BusActor (String, UInt32) -> Void)?

    init(connection: Connection) { self.connection = connection }

    /// The user of the connection `name`, if it is known already.
    func knownUser(of name: String) -> UInt32? { known[name]?.uid }

    /// The user and process of the connection `name`, asked of the bus unless known.
    func credentials(of name: String) async throws(DBusError) -> (uid: UInt32, pid: UInt32?) {
        if let credentials = known[name] { return credentials }
        lookups[name, default: 0] += 1
        defer {
            let remaining = (lookups[name] ?? 1) - 1
            lookups[name] = remaining > 0 ? remaining : nil
            if remaining == 0 { vanishedDuringLookup.remove(name) }
        }
        let credentials = try await connection.credentials(of: name)
        guard !vanishedDuringLookup.contains(name) else {
            throw DBusError(name: DBusError.Name.nameHasNoOwner, message: "\(name) went away")
        }
        if known.updateValue(credentials, forKey: name) == nil { onIdentified?(name, credentials.uid) }
        return credentials
    }

    /// The connection `name` left: its credentials are forgotten, and lookups still running for it fail.
    func vanished(_ name: String) {
        known[name] = nil
        if lookups[name] != nil { vanishedDuringLookup.insert(name) }
    }
}
