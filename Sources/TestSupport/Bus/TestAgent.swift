import DBus
import Loop

/// A GeoClue agent for tests: `org.freedesktop.GeoClue2.Agent` at `/org/freedesktop/GeoClue2/Agent` on a
/// connection of its own, as gnome-shell exports it, with `MaxAccuracyLevel` and `AuthorizeApp` under the
/// test's control.
@BusActor
public final class GeoClueTestAgent: ExportedObject {
    public static let path = ObjectPath("/org/freedesktop/GeoClue2/Agent")!
    public static let interface = "org.freedesktop.GeoClue2.Agent"

    /// How `AuthorizeApp` answers.
    public enum Answer: Sendable {
        /// `(true, level)`.
        case allow(UInt32)
        /// `(false, 0)`.
        case refuse
        /// No answer at all, ever.
        case never
    }

    /// The agent's connection.
    public let connection: Connection
    /// How the next `AuthorizeApp` calls are answered; set it with ``setAnswer(_:)``.
    public private(set) var answer: Answer
    /// The `AuthorizeApp` calls received: desktop id and requested level.
    public private(set) var asked: [(app: String, level: UInt32)] = []
    /// `MaxAccuracyLevel`; set it with ``setMaxAccuracyLevel(_:)``.
    public private(set) var maxAccuracyLevel: UInt32
    /// Calls left unanswered on purpose.
    private var unanswered: [MethodCall] = []

    /// Connects to `bus` and exports the agent (not yet registered; see ``register(as:)``).
    public convenience init(bus: PrivateBus, maxAccuracyLevel: UInt32 = 8, answer: Answer = .allow(8))
        throws(DBusError)
    {
        try self.init(address: bus.address, maxAccuracyLevel: maxAccuracyLevel, answer: answer)
    }

    /// Connects to the bus at `address` and exports the agent (not yet registered; see ``register(as:)``).
    public init(address: String, maxAccuracyLevel: UInt32 = 8, answer: Answer = .allow(8)) throws(DBusError) {
        connection = try Connection.open(address: address)
        self.maxAccuracyLevel = maxAccuracyLevel
        self.answer = answer
        connection.export(self, at: Self.path)
    }

    /// `AddAgent(id)` on the service's Manager. The call returns only after the service has read the agent's
    /// properties (GeoClue does so before it answers), which this connection answers meanwhile.
    public func register(as id: String = "gnome-shell") async throws(DBusError) {
        _ = try await connection.call(
            destination: GeoClueTestClient.service, path: GeoClueTestClient.managerPath,
            interface: GeoClueTestClient.managerInterface, member: "AddAgent", arguments: [.string(id)],
            timeout: .seconds(20))
    }

    /// An agent on `bus` that allows every app up to `maxAccuracyLevel`, registered as `id`.
    public static func registered(on bus: PrivateBus, as id: String, maxAccuracyLevel: UInt32 = 8)
        async throws(DBusError) -> GeoClueTestAgent
    {
        try await registered(address: bus.address, as: id, maxAccuracyLevel: maxAccuracyLevel)
    }

    /// An agent on the bus at `address` that allows every app up to `maxAccuracyLevel`, registered as `id`.
    public static func registered(address: String, as id: String, maxAccuracyLevel: UInt32 = 8)
        async throws(DBusError) -> GeoClueTestAgent
    {
        let agent = try GeoClueTestAgent(
            address: address, maxAccuracyLevel: maxAccuracyLevel, answer: .allow(maxAccuracyLevel))
        try await agent.register(as: id)
        return agent
    }

    /// Changes `MaxAccuracyLevel`, emitting `PropertiesChanged` as GDBus does.
    public func setMaxAccuracyLevel(_ level: UInt32) {
        maxAccuracyLevel = level
        connection.emitPropertiesChanged(
            path: Self.path, interface: Self.interface, changed: ["MaxAccuracyLevel": .uint32(level)])
    }

    /// Changes how the next `AuthorizeApp` calls are answered.
    public func setAnswer(_ answer: Answer) { self.answer = answer }

    /// Fails the calls it left unanswered and leaves the bus.
    public func close() {
        for call in unanswered { call.fail(.failed("the agent went away")) }
        unanswered.removeAll()
        connection.close()
    }

    public var interfaces: [InterfaceDescription] {
        [
            InterfaceDescription(
                Self.interface,
                methods: [
                    MethodDescription(
                        "AuthorizeApp", inputs: [Argument("desktop_id", "s"), Argument("req_accuracy_level", "u")],
                        outputs: [Argument("authorized", "b"), Argument("allowed_accuracy_level", "u")])
                ],
                properties: [PropertyDescription("MaxAccuracyLevel", "u", .read)])
        ]
    }

    public func property(_ name: String, interface: String) -> DBusValue { .uint32(maxAccuracyLevel) }

    public func handle(_ call: MethodCall, interface: String, method: String) throws(DBusError) -> Reply {
        asked.append((call.arguments[0].string ?? "", call.arguments[1].uint32 ?? 0))
        switch answer {
        case .allow(let level): return .values([.boolean(true), .uint32(level)])
        case .refuse: return .values([.boolean(false), .uint32(0)])
        case .never:
            unanswered.append(call)
            return .later
        }
    }
}
