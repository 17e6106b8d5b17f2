import Loop

/// Follows which connection owns a well-known bus name, without ever starting the service behind it.
///
/// The owner is asked for with the bus's `GetNameOwner`, which never activates anything, and then followed
/// through `NameOwnerChanged`. Calls to the service addressed to the owner's unique name cannot activate it
/// either: a service that is not running stays that way.
@BusActor
public final class NameOwnerFollower {
    /// The bus driver's object path.
    public static let busPath = ObjectPath("/org/freedesktop/DBus")!

    /// The well-known name followed.
    public let name: String
    private let connection: Connection
    private let timeout: Duration
    /// The unique name of the owner, nil while nobody owns the name.
    public private(set) var owner: String?
    /// Called after the owner changed (to nil when the service left), with the previous owner.
    public var onChange: (@BusActor (_ previous: String?) -> Void)?
    /// How many `NameOwnerChanged` have been seen; a lookup answered after one is out of date.
    private var changesSeen = 0

    /// Follows `name` on `connection`, each call to the bus allowed `timeout`.
    public init(name: String, connection: Connection, timeout: Duration) {
        self.name = name
        self.connection = connection
        self.timeout = timeout
    }

    /// Subscribes to the name's owner changes, then looks the current owner up.
    public func start() async throws(DBusError) {
        _ = try await connection.subscribe(
            SignalMatch(
                sender: "org.freedesktop.DBus", path: Self.busPath, interface: "org.freedesktop.DBus",
                member: "NameOwnerChanged", stringArguments: [0: name])
        ) { [weak self] message in self?.ownerChanged(message) }
        let seen = changesSeen
        let current = try await currentOwner()
        if changesSeen == seen { owner = current }
    }

    /// The name's owner now, from `GetNameOwner`; nil when it has none.
    private func currentOwner() async throws(DBusError) -> String? {
        let reply: [DBusValue]
        do {
            reply = try await connection.call(
                destination: "org.freedesktop.DBus", path: Self.busPath, interface: "org.freedesktop.DBus",
                member: "GetNameOwner", arguments: [.string(name)], timeout: timeout)
        } catch {
            if error.name == DBusError.Name.nameHasNoOwner { return nil }
            throw error
        }
        guard reply.count == 1, let unique = reply[0].string, unique.hasPrefix(":") else {
            throw .failed("the bus answered GetNameOwner(\(name)) with (\(reply.map(\.signature).joined()))")
        }
        return unique
    }

    private func ownerChanged(_ message: Message) {
        guard message.sender == "org.freedesktop.DBus" else { return }
        let arguments = message.arguments()
        guard arguments.count == 3, arguments[0].string == name, let new = arguments[2].string else { return }
        changesSeen += 1
        let previous = owner
        let next = new.isEmpty ? nil : new
        guard previous != next else { return }
        owner = next
        onChange?(previous)
    }
}
