import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import WhereaboutsCore

/// `whereaboutsd` running on a private bus with a test configuration, as the end-to-end tests use it.
public final class DaemonHarness: @unchecked Sendable {
    /// The private bus.
    public let bus: PrivateBus
    /// The folder for the config, static file and logs.
    public let directory: URL
    /// The daemon process.
    public private(set) var daemon: ChildProcess?

    /// Whether ``stop()`` stops the bus too.
    private let stopsBus: Bool

    /// Starts a bus; `config` is the daemon's configuration text (`@DIR@` is replaced by ``directory``).
    /// Unless the text has an `[authorisation]` section, one is appended that keeps the grants in the harness
    /// folder and asks polkit only when `polkit` is true. Call ``startDaemon(arguments:)`` to start the daemon.
    ///
    /// With `folder`, the harness keeps its files in that new folder of the bus's and leaves the bus running when
    /// it stops, so that several daemons in turn can share a bus and what runs on it, each with state of its own.
    public init(
        config: String, files: [String: String] = [:], polkit: Bool = false, bus: PrivateBus? = nil,
        folder: String? = nil
    ) throws {
        var config = config
        if !config.contains("[authorisation]") {
            config += "\n\n[authorisation]\npolkit=\(polkit)\ngrants=@DIR@/grants\n"
        }
        self.bus = try bus ?? PrivateBus()
        if let folder {
            directory = self.bus.directory.appendingPathComponent(folder)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
            stopsBus = false
        } else {
            directory = self.bus.directory
            stopsBus = true
        }
        for (name, text) in files {
            try text.replacingOccurrences(of: "@DIR@", with: directory.path)
                .write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        try config.replacingOccurrences(of: "@DIR@", with: directory.path)
            .write(to: configFile, atomically: true, encoding: .utf8)
    }

    /// The daemon's configuration file.
    public var configFile: URL { directory.appendingPathComponent("whereabouts.conf") }

    /// A file in the harness folder.
    public func file(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// Starts `whereaboutsd` and, unless `waitForName` is false, waits until it owns `org.freedesktop.GeoClue2`.
    /// A `launcher` (a command and its arguments, such as `unshare` and a shell script) is run with the daemon's
    /// path and arguments appended, and must exec it; `environment` is added to the bus's.
    public func startDaemon(
        arguments: [String]? = nil, waitForName: Bool = true, launcher: [String] = [],
        environment: [String: String] = [:]
    ) throws {
        let executable = try ProjectPaths.product("whereaboutsd")
        let command = launcher + [executable.path] + (arguments ?? ["--config", configFile.path, "--timeout", "0"])
        let process = try ChildProcess(
            URL(fileURLWithPath: command[0]), Array(command.dropFirst()),
            environment: bus.environment.merging(environment) { $1 },
            logFile: directory.appendingPathComponent("daemon.log"))
        daemon = process
        guard waitForName else { return }
        try Wait.until("whereaboutsd to own org.freedesktop.GeoClue2", timeout: 60) {
            guard process.isRunning else {
                throw TestEnvironmentError("whereaboutsd exited early:\n\(process.log)")
            }
            return try self.busctl(["status", "org.freedesktop.GeoClue2"]).status == 0
        }
    }

    /// Makes `whereaboutsd` activatable on the private bus, as the package's activation file does on the system
    /// bus: the first call to `org.freedesktop.GeoClue2` starts it, and the bus holds that call until the daemon owns
    /// the name. The daemon's output goes to the bus's log (``PrivateBus/log``).
    public func makeActivatable(arguments: [String]) throws {
        let executable = try ProjectPaths.product("whereaboutsd")
        let command = ["/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", executable.path] + arguments
        let text = "[D-BUS Service]\nName=org.freedesktop.GeoClue2\nExec=\(command.joined(separator: " "))\n"
        try text.write(
            to: bus.serviceDirectory.appendingPathComponent("org.freedesktop.GeoClue2.service"), atomically: true,
            encoding: .utf8)
    }

    /// The daemon's log so far.
    public var daemonLog: String { daemon?.log ?? "" }

    /// Runs `busctl --address=<bus> ARGS` and returns its exit status and output.
    public func busctl(_ arguments: [String], asUser user: String? = nil) throws -> (status: Int32, output: String) {
        let output = directory.appendingPathComponent("busctl-\(UUID().uuidString).out")
        var command = [try Executables.find("busctl").path, "--address=\(bus.address)"] + arguments
        if let user {
            command =
                [
                    try Executables.find("setpriv").path, "--reuid=\(user)",
                    "--regid=\(user == "nobody" ? "nogroup" : user)", "--clear-groups",
                ] + command
        }
        let process = try ChildProcess(URL(fileURLWithPath: command[0]), Array(command.dropFirst()), logFile: output)
        let status = try process.wait(timeout: 20)
        defer { try? FileManager.default.removeItem(at: output) }
        return ((status >> 8) & 0xff, process.log)
    }

    /// Stops the daemon and, unless the harness has a folder of the bus's, the bus.
    public func stop() {
        daemon?.stop()
        if stopsBus { bus.stop() }
    }

    deinit { stop() }
}

/// One test client connection, speaking GeoClue2 through the project's own binding.
@BusActor
public final class GeoClueTestClient {
    public static let service = BusNames.GeoClue.busName
    public static let managerPath = ObjectPath(BusNames.GeoClue.managerPath)!
    public static let managerInterface = BusNames.GeoClue.managerInterface
    public static let clientInterface = BusNames.GeoClue.clientInterface
    public static let locationInterface = BusNames.GeoClue.locationInterface

    /// The connection.
    public let connection: Connection
    /// Every signal this connection received, in order.
    public private(set) var signals: [Message] = []

    /// Connects to `bus` and records every signal routed to this connection.
    public init(bus: PrivateBus) async throws {
        connection = try Connection.open(address: bus.address)
        _ = try await connection.subscribe(SignalMatch()) { [weak self] in self?.signals.append($0) }
    }

    /// Calls a method on the service, waiting up to a minute for the answer: a call the service holds (a request
    /// waiting for a fix) may wait long on a machine loaded by the suites running beside it, and a test that needs a
    /// refusal in time says so itself.
    public func call(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [])
        async throws(DBusError) -> [DBusValue]
    {
        try await connection.call(
            destination: GeoClueTestClient.service, path: path, interface: interface, member: member,
            arguments: arguments, timeout: .seconds(60))
    }

    /// `GetClient`.
    public func getClient() async throws(DBusError) -> ObjectPath {
        try await call(GeoClueTestClient.managerPath, GeoClueTestClient.managerInterface, "GetClient")[0].objectPath!
    }

    /// `CreateClient`.
    public func createClient() async throws(DBusError) -> ObjectPath {
        try await call(GeoClueTestClient.managerPath, GeoClueTestClient.managerInterface, "CreateClient")[0].objectPath!
    }

    /// `Properties.Get`.
    public func get(_ path: ObjectPath, _ interface: String, _ name: String) async throws(DBusError) -> DBusValue {
        try await call(path, "org.freedesktop.DBus.Properties", "Get", [.string(interface), .string(name)])[0].unwrapped
    }

    /// `Properties.GetAll`.
    public func getAll(_ path: ObjectPath, _ interface: String) async throws(DBusError) -> [String: DBusValue] {
        try await call(path, "org.freedesktop.DBus.Properties", "GetAll", [.string(interface)])[0].stringKeyedEntries
            ?? [:]
    }

    /// `Properties.Set`.
    public func set(_ path: ObjectPath, _ interface: String, _ name: String, _ value: DBusValue) async throws(DBusError)
    {
        _ = try await call(
            path, "org.freedesktop.DBus.Properties", "Set", [.string(interface), .string(name), .variant(value)])
    }

    /// A client with `DesktopId` and `RequestedAccuracyLevel` set and started.
    public func startedClient(desktopId: String = "whereabouts-test", level: UInt32 = 8) async throws(DBusError)
        -> ObjectPath
    {
        let client = try await getClient()
        try await set(client, GeoClueTestClient.clientInterface, "DesktopId", .string(desktopId))
        try await set(client, GeoClueTestClient.clientInterface, "RequestedAccuracyLevel", .uint32(level))
        _ = try await call(client, GeoClueTestClient.clientInterface, "Start")
        return client
    }

    /// The `LocationUpdated` signals received so far, as (old, new) pairs.
    public var locationUpdates: [(old: ObjectPath, new: ObjectPath)] {
        signals.filter { $0.member == "LocationUpdated" }.map { message in
            let arguments = message.arguments()
            return (arguments[0].objectPath!, arguments[1].objectPath!)
        }
    }

    /// The bus's `NameOwnerChanged` signals for `name` this connection received, in order (an empty `new` is the
    /// name left without an owner).
    public func nameOwnerChanges(of name: String) -> [(old: String, new: String)] {
        signals.filter { $0.member == "NameOwnerChanged" && $0.arguments().first?.string == name }.map { message in
            let arguments = message.arguments()
            return (arguments[1].string ?? "", arguments[2].string ?? "")
        }
    }

    /// Waits until `condition` holds, up to `timeout`.
    public func waitFor(_ what: String, timeout: Duration = .seconds(10), _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else { throw TestEnvironmentError("timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits until at least `count` `LocationUpdated` signals have arrived and returns them.
    public func waitForUpdates(_ count: Int, timeout: Duration = .seconds(10)) async throws -> [(
        old: ObjectPath, new: ObjectPath
    )] {
        try await waitFor("\(count) LocationUpdated signal(s)", timeout: timeout) { locationUpdates.count >= count }
        return locationUpdates
    }

    /// Closes the connection.
    public func close() { connection.close() }
}
