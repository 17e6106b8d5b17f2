import DBus
import Foundation
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
    public init(bus: PrivateBus, maxAccuracyLevel: UInt32 = 8, answer: Answer = .allow(8)) throws {
        connection = try Connection.open(address: bus.address)
        self.maxAccuracyLevel = maxAccuracyLevel
        self.answer = answer
        connection.export(self, at: Self.path)
    }

    /// `AddAgent(id)` on the service's Manager.
    public func register(as id: String = "gnome-shell") async throws(DBusError) {
        _ = try await connection.call(
            destination: GeoClueTestClient.service, path: GeoClueTestClient.managerPath,
            interface: GeoClueTestClient.managerInterface, member: "AddAgent", arguments: [.string(id)],
            timeout: .seconds(10))
    }

    /// Changes `MaxAccuracyLevel`, emitting `PropertiesChanged` as GDBus does.
    public func setMaxAccuracyLevel(_ level: UInt32) {
        maxAccuracyLevel = level
        connection.emitPropertiesChanged(
            path: Self.path, interface: Self.interface, changed: ["MaxAccuracyLevel": .uint32(level)])
    }

    /// Changes how the next `AuthorizeApp` calls are answered.
    public func setAnswer(_ answer: Answer) { self.answer = answer }

    /// Leaves the bus.
    public func close() { connection.close() }

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

extension DaemonHarness {
    /// Starts another `whereaboutsd` with this harness's bus and configuration and `environment` added (the
    /// harness's own ``startDaemon(arguments:waitForName:)`` passes none), and returns once it owns
    /// `org.freedesktop.GeoClue2`. The caller stops it.
    public func startDaemon(environment: [String: String]) throws -> ChildProcess {
        let process = try ChildProcess(
            try ProjectPaths.product("whereaboutsd"), ["--config", configFile.path, "--timeout", "0"],
            environment: bus.environment.merging(environment) { $1 },
            logFile: directory.appendingPathComponent("daemon-\(UUID().uuidString.prefix(8)).log"))
        try Wait.until("whereaboutsd to own org.freedesktop.GeoClue2", timeout: 20) {
            guard process.isRunning else { throw TestEnvironmentError("whereaboutsd exited early:\n\(process.log)") }
            return try self.busctl(["status", "org.freedesktop.GeoClue2"]).status == 0
        }
        return process
    }
}
