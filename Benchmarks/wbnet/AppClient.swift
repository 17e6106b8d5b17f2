import Foundation
import TestBasics
import TestSupport

/// An app run as an unprivileged user through `setpriv`: `Tests/Clients/location_client.py`, python-dbus on a
/// bus connection of its own, timing `Start` → first `LocationUpdated` itself.
enum AppClient {
    static let script = ProjectPaths.clients.appendingPathComponent("location_client.py")

    /// Milliseconds from `Start` to the first fix of a new exact client of `app` run by `user`, or nil when none
    /// came within `timeout` seconds; a refused call throws.
    static func firstFix(
        on bus: PrivateBus, app: String, user: String = InstalledAuthorisation.user, timeout: Double = 5
    ) throws -> Double? {
        let result = try Unprivileged.run(
            [WPASupplicantMock.python.path, script.path, bus.address, app, "first", String(timeout)], asUser: user,
            environment: bus.environment, in: bus.directory, timeout: timeout + 30)
        let lines = result.output.split(separator: "\n")
        if let line = lines.first(where: { $0.hasPrefix("fix ") }) { return Double(line.dropFirst(4)) }
        if result.status == 1 { return nil }
        throw TestEnvironmentError("the client of \(app) as \(user) failed (exit \(result.status)):\n\(result.output)")
    }

    /// Starts a client of `app` run by `user` that stays started until stopped, and returns once `Start` returned.
    static func hold(on bus: PrivateBus, app: String, user: String = InstalledAuthorisation.user) throws -> ChildProcess
    {
        let process = try Unprivileged.spawn(
            [WPASupplicantMock.python.path, script.path, bus.address, app, "hold"], asUser: user,
            environment: bus.environment, in: bus.directory)
        try Wait.until("the client of \(app) as \(user) to start", timeout: 20) {
            let log = process.log
            if log.contains("refused") || !process.isRunning {
                throw TestEnvironmentError("the client of \(app) as \(user) failed:\n\(log)")
            }
            return log.contains("started")
        }
        return process
    }
}
