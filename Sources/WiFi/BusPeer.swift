import DBus
import Loop
import WhereaboutsCore

/// A wireless daemon answered with an error or with a reply of the wrong shape.
struct PeerFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Calls to one wireless daemon, addressed to its unique name, each with a timeout.
@BusActor
struct PeerCalls {
    let connection: Connection
    /// The daemon's name in log lines: `wpa_supplicant`, `NetworkManager`.
    let service: String
    let timeout: Duration

    /// Calls `member` on `owner` and returns the reply's arguments.
    func call(
        _ owner: String, _ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = []
    ) async throws(DBusError) -> [DBusValue] {
        try await connection.call(
            destination: owner, path: path, interface: interface, member: member, arguments: arguments,
            timeout: timeout)
    }

    /// One property, from `org.freedesktop.DBus.Properties.Get`, its variant unwrapped.
    func property(_ owner: String, _ path: ObjectPath, _ interface: String, _ name: String)
        async throws(PeerFailure) -> DBusValue
    {
        let reply: [DBusValue]
        do {
            reply = try await call(
                owner, path, "org.freedesktop.DBus.Properties", "Get", [.string(interface), .string(name)])
        } catch {
            throw PeerFailure("cannot read \(name) of \(path) from \(service): \(error)")
        }
        guard reply.count == 1, case .variant(let value) = reply[0] else {
            throw PeerFailure("\(service) answered Get(\(name)) on \(path) with (\(reply.map(\.signature).joined()))")
        }
        return value.unwrapped
    }

    /// Every property of `interface`, from `org.freedesktop.DBus.Properties.GetAll`, variants unwrapped.
    func allProperties(_ owner: String, _ path: ObjectPath, _ interface: String)
        async throws(PeerFailure) -> [String: DBusValue]
    {
        let reply: [DBusValue]
        do {
            reply = try await call(owner, path, "org.freedesktop.DBus.Properties", "GetAll", [.string(interface)])
        } catch {
            throw PeerFailure("cannot read \(path) from \(service): \(error)")
        }
        guard reply.count == 1, reply[0].signature == "a{sv}", let properties = reply[0].stringKeyedEntries else {
            throw PeerFailure("\(service) answered GetAll on \(path) with (\(reply.map(\.signature).joined()))")
        }
        return properties
    }
}
