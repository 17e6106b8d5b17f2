import Foundation
import Glibc
import TestBasics

/// A throwaway `dbus-daemon` with a system-bus-like policy, for tests.
///
/// Like the system bus it lets any user connect, denies method calls and name ownership by default, and lets
/// replies, errors and signals through; the project's own bus policy (`dbus/*.conf`) is included, so tests see
/// what a real installation sees. Limits are raised for load tests.
public final class PrivateBus: @unchecked Sendable {
    /// The bus address, for `DBUS_SYSTEM_BUS_ADDRESS`.
    public let address: String
    /// The folder holding the socket and the config.
    public let directory: URL
    /// The folder of activation files (`NAME.service`) the bus reads when a call names a service nobody owns.
    public var serviceDirectory: URL { directory.appendingPathComponent("activation") }
    private let process: ChildProcess

    /// Starts a bus; `extraPolicy` is XML inserted into the config (for example a `<policy>` block).
    public init(extraPolicy: String = "") throws {
        directory = try TemporaryDirectory.make(prefix: "whereabouts-bus")
        // The directory must be reachable by unprivileged test callers.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        let socket = directory.appendingPathComponent("system_bus_socket").path
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("activation"), withIntermediateDirectories: false)
        address = "unix:path=\(socket)"
        let policyDirectory = ProjectPaths.root.appendingPathComponent("dbus").path
        let template = ProjectPaths.root.appendingPathComponent("scripts/system-bus.conf.in")
        let config = try String(contentsOf: template, encoding: .utf8)
            .replacingOccurrences(of: "@SOCKET@", with: socket)
            .replacingOccurrences(of: "@SERVICE_DIR@", with: directory.appendingPathComponent("activation").path)
            .replacingOccurrences(of: "@POLICY_DIR@", with: policyDirectory)
            .replacingOccurrences(of: "@EXTRA_POLICY@", with: extraPolicy)
        let configFile = directory.appendingPathComponent("bus.conf")
        try config.write(to: configFile, atomically: true, encoding: .utf8)
        process = try ChildProcess(
            try Executables.find("dbus-daemon"),
            ["--config-file=\(configFile.path)", "--nofork", "--nopidfile", "--print-address"],
            logFile: directory.appendingPathComponent("bus.log"))
        // dbus-daemon prints its address once it listens.
        let process = self.process
        try Wait.until("the private bus to listen", timeout: 10) {
            guard process.isRunning else { throw TestEnvironmentError("dbus-daemon exited:\n\(process.log)") }
            return process.log.contains("unix:path=")
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: socket)
    }

    /// What the bus and the services it activated wrote to standard output and error.
    public var log: String { process.log }

    /// The process id of the bus's `dbus-daemon`.
    public var pid: pid_t { process.pid }

    /// The environment for a process that should take this bus as its system bus.
    public var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = address
        return environment
    }

    /// Stops the bus and removes its folder.
    public func stop() {
        // dbus-daemon ignores SIGTERM; a throwaway bus has nothing to save.
        process.signal(SIGKILL)
        _ = try? process.wait(timeout: 5)
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
