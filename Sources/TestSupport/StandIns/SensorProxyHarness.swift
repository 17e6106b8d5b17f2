import Foundation
import Glibc
import TestBasics

/// The real iio-sensor-proxy (Debian 12's `iio-sensor-proxy` 3.0) on a ``PrivateBus``, with its fake compass.
///
/// iio-sensor-proxy finds sensors through udev and exits when there are none. Its fake compass driver, enabled by
/// `FAKE_COMPASS=1`, latches onto an input device named "Power Button"; here `umockdev-run` (Debian's `umockdev`)
/// gives it a made-up sysfs holding just that device, so it runs on any machine. The fake compass reports a
/// heading only while claimed: the first claim starts it at 10°, and it turns by 10° a second (350°, then 0°),
/// going on from where it stopped at the next claim. Claims are per bus connection and dropped when the
/// connection leaves (`ReleaseCompass` drops one earlier); `HasCompass` is true.
///
/// The bus must carry the package's own policy (root owns `net.hadess.SensorProxy`; only the user `geoclue` may
/// use the compass object; everyone may use the main object): create it with
/// `PrivateBus(extraPolicy: SensorProxyHarness.busPolicy())`.
public final class SensorProxyHarness: @unchecked Sendable {
    public static let busName = "net.hadess.SensorProxy"
    public static let compassPath = "/net/hadess/SensorProxy/Compass"
    public static let compassInterface = "net.hadess.SensorProxy.Compass"
    public static let executable = URL(fileURLWithPath: "/usr/sbin/iio-sensor-proxy")
    /// The bus policy the package installs.
    public static let packagePolicy = URL(fileURLWithPath: "/etc/dbus-1/system.d/net.hadess.SensorProxy.conf")
    /// A compass user: claims, prints headings (see the script).
    public static let compassClient = ProjectPaths.clients.appendingPathComponent("compass_client.py")

    /// The package's bus policy, and the same use of the compass for each of `compassUsers` as the package gives
    /// `geoclue`.
    public static func busPolicy(compassUsers: [String] = []) -> String {
        let users = compassUsers.map { user in
            let targets = [
                Self.compassInterface, "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Properties",
                "org.freedesktop.DBus.Peer",
            ]
            let rules = targets.map {
                "<allow send_destination=\"\(busName)\" send_interface=\"\($0)\" send_path=\"\(compassPath)\"/>"
            }
            return "<policy user=\"\(user)\">\(rules.joined())</policy>"
        }
        return "<include ignore_missing=\"yes\">\(packagePolicy.path)</include>" + users.joined()
    }

    /// The bus it is on.
    public let bus: PrivateBus
    /// `umockdev-run` with iio-sensor-proxy under it.
    public let process: ChildProcess

    /// Starts iio-sensor-proxy and returns once it owns `net.hadess.SensorProxy`.
    public init(bus: PrivateBus) throws {
        self.bus = bus
        for file in [Self.executable, Self.packagePolicy] where !FileManager.default.fileExists(atPath: file.path) {
            throw TestEnvironmentError("\(file.path) is missing; install iio-sensor-proxy")
        }
        let umockdev: URL
        do {
            umockdev = try Executables.find("umockdev-run")
        } catch {
            throw TestEnvironmentError("umockdev-run is missing; install umockdev")
        }
        let device = bus.directory.appendingPathComponent("power-button.umockdev")
        try """
        P: /devices/LNXSYSTM:00/LNXPWRBN:00/input/input0
        E: DEVPATH=/devices/LNXSYSTM:00/LNXPWRBN:00/input/input0
        E: SUBSYSTEM=input
        E: NAME="Power Button"
        E: PRODUCT=19/0/1/0
        A: name=Power Button

        """.write(to: device, atomically: true, encoding: .utf8)
        var environment = bus.environment
        environment["FAKE_COMPASS"] = "1"
        let process = try ChildProcess(
            umockdev, ["--device", device.path, "--", Self.executable.path, "--verbose"], environment: environment,
            logFile: bus.directory.appendingPathComponent("iio-sensor-proxy-\(UUID().uuidString).log"))
        self.process = process
        try Wait.until("iio-sensor-proxy to own \(Self.busName)", timeout: 20) {
            guard process.isRunning else { throw TestEnvironmentError("iio-sensor-proxy exited:\n\(process.log)") }
            return try BusStandIn.busctl(bus, ["status", Self.busName]).status == 0
        }
    }

    /// The compass's `CompassHeading`, read by `user`, whom the bus policy must let use the compass.
    public func heading(asUser user: String = "geoclue") throws -> Double {
        let output = try compassProperty("CompassHeading", asUser: user)
        let words = BusctlWords.split(output)
        guard words.count == 2, words[0] == "d", let heading = Double(words[1]) else {
            throw TestEnvironmentError("CompassHeading is \(output)")
        }
        return heading
    }

    /// The compass's `HasCompass`, read by `user`.
    public func hasCompass(asUser user: String = "geoclue") throws -> Bool {
        let output = try compassProperty("HasCompass", asUser: user)
        let words = BusctlWords.split(output)
        guard words.count == 2, words[0] == "b", let has = Bool(words[1]) else {
            throw TestEnvironmentError("HasCompass is \(output)")
        }
        return has
    }

    /// Runs ``compassClient`` as `user` until it has seen `count` headings, and returns its output.
    public func claimCompass(asUser user: String = "geoclue", headings count: Int) throws -> CommandResult {
        try Unprivileged.run(
            [BusStandIn.python.path, Self.compassClient.path, bus.address, String(count)], asUser: user,
            environment: bus.environment, in: bus.directory, timeout: 30)
    }

    /// Stops iio-sensor-proxy (`umockdev-run` passes the signal on).
    public func stop() {
        process.stop(grace: 2)
    }

    private func compassProperty(_ name: String, asUser user: String) throws -> String {
        let result = try Unprivileged.run(
            [
                try Executables.find("busctl").path, "--address=\(bus.address)", "get-property", Self.busName,
                Self.compassPath, Self.compassInterface, name,
            ], asUser: user, environment: bus.environment, in: bus.directory)
        guard result.status == 0 else {
            throw TestEnvironmentError("\(user) cannot read \(name): \(result.output)\n\(process.log)")
        }
        return result.output
    }

    deinit { stop() }
}
