import Foundation
import Glibc

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
    private let process: ChildProcess

    /// Starts a bus; `extraPolicy` is XML inserted into the config (for example a `<policy>` block).
    public init(extraPolicy: String = "") throws {
        directory = try TemporaryDirectory.make(prefix: "whereabouts-bus")
        // The directory must be reachable by unprivileged test callers.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        let socket = directory.appendingPathComponent("system_bus_socket").path
        address = "unix:path=\(socket)"
        let policyDirectory = ProjectPaths.root.appendingPathComponent("dbus").path
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <deny own="*"/>
                <deny send_type="method_call"/>
                <allow send_type="signal"/>
                <allow send_requested_reply="true" send_type="method_return"/>
                <allow send_requested_reply="true" send_type="error"/>
                <allow receive_type="method_call"/>
                <allow receive_type="method_return"/>
                <allow receive_type="error"/>
                <allow receive_type="signal"/>
                <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
                <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
                <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
                <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Peer"/>
              </policy>
              <policy user="root">
                <allow own_prefix="io.github.whereabouts1.test"/>
                <allow send_destination_prefix="io.github.whereabouts1.test"/>
              </policy>
              \(extraPolicy)
              <includedir>\(policyDirectory)</includedir>
              <limit name="max_connections_per_user">8192</limit>
              <limit name="max_completed_connections">8192</limit>
              <limit name="max_incomplete_connections">1024</limit>
              <limit name="max_match_rules_per_connection">8192</limit>
              <limit name="max_replies_per_connection">8192</limit>
              <limit name="max_names_per_connection">64</limit>
            </busconfig>
            """
        let configFile = directory.appendingPathComponent("bus.conf")
        try config.write(to: configFile, atomically: true, encoding: .utf8)
        process = try ChildProcess(
            try Executables.find("dbus-daemon"), ["--config-file=\(configFile.path)", "--nofork", "--nopidfile", "--print-address"],
            logFile: directory.appendingPathComponent("bus.log"))
        // dbus-daemon prints its address once it listens.
        let process = self.process
        try Wait.until("the private bus to listen", timeout: 10) {
            guard process.isRunning else { throw TestEnvironmentError("dbus-daemon exited:\n\(process.log)") }
            return process.log.contains("unix:path=")
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: socket)
    }

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
