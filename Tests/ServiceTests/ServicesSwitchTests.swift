import DBus
import Foundation
import Loop
import TestSupport
import Testing

/// `io.github.whereabouts1.Manager.LocationServicesEnabled`: the switch that stops every client, kept across
/// restarts, set only with the management authorisation.
@Suite("The location services switch")
struct ServicesSwitchTests {
    static let manager = "io.github.whereabouts1.Manager"
    static let client = "io.github.whereabouts1.Client"

    static func setSwitch(_ app: GeoClueTestClient, _ enabled: Bool) async throws(DBusError) {
        try await app.set(GeoClueTestClient.managerPath, manager, "LocationServicesEnabled", .boolean(enabled))
    }

    @BusActor
    static func availabilityReasons(_ app: GeoClueTestClient) -> [String] {
        app.signals.filter { $0.member == "AvailabilityChanged" }.compactMap { $0.arguments().last?.string }
    }

    @BusActor
    static func activeValues(_ app: GeoClueTestClient) -> [Bool] {
        app.signals.compactMap { message in
            guard message.member == "PropertiesChanged",
                message.arguments().first?.string == GeoClueTestClient.clientInterface
            else { return nil }
            return message.arguments()[1].stringKeyedEntries?["Active"]?.bool
        }
    }

    @BusActor
    static func waitForReason(_ app: GeoClueTestClient, _ reason: String) async throws {
        try await app.waitFor("AvailabilityChanged with reason \(reason)") { availabilityReasons(app).contains(reason) }
    }

    @Test func switchingOffStopsEveryClientAndOnResumesThem() async throws {
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        try harness.startDaemon()
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        let watching = try await app.startedClient()
        _ = try await app.waitForUpdates(1)
        let other = try await app.createClient()
        try await app.set(other, GeoClueTestClient.clientInterface, "DesktopId", .string("whereabouts-test"))

        try await Self.setSwitch(app, false)
        #expect(
            try await app.get(GeoClueTestClient.managerPath, Self.manager, "LocationServicesEnabled") == .boolean(false)
        )
        #expect(try await app.get(watching, GeoClueTestClient.clientInterface, "Active") == .boolean(false))
        #expect(try await app.get(watching, Self.client, "Available") == .boolean(false))
        #expect(try await app.get(watching, Self.client, "LastLocation") == .objectPath(.root))
        #expect(try await app.availableLevel() == 0)
        try await Self.waitForReason(app, "services-disabled")
        await expectDBusError("io.github.whereabouts1.Error.ServicesDisabled") {
            _ = try await app.call(other, Self.client, "RequestLocation", [.vardict(["timeout": .uint32(2000)])])
        }
        await expectDBusError("io.github.whereabouts1.Error.ServicesDisabled") {
            _ = try await app.call(other, GeoClueTestClient.clientInterface, "Start")
        }
        let updatesWhileOff = await app.locationUpdates.count

        try await Self.setSwitch(app, true)
        _ = try await app.waitForUpdates(updatesWhileOff + 1)
        #expect(try await app.get(watching, GeoClueTestClient.clientInterface, "Active") == .boolean(true))
        #expect(await Self.activeValues(app) == [true, false, true])
        #expect(await Self.availabilityReasons(app).contains("services-enabled"))
        #expect(
            try await app.get(other, GeoClueTestClient.clientInterface, "Active") == .boolean(false),
            "a client that failed to start while off is not started by the switch")
        #expect(try await app.availableLevel() == 8)
    }

    @Test func theSwitchSurvivesARestartAndACorruptFileFailsClosed() async throws {
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        try harness.startDaemon()
        let app = try await GeoClueTestClient(bus: harness.bus)
        try await Self.setSwitch(app, false)
        await app.close()
        #expect(try String(contentsOf: harness.file("services"), encoding: .utf8) == "enabled=false\n")

        harness.daemon?.stop()
        try harness.startDaemon()
        let again = try await GeoClueTestClient(bus: harness.bus)
        #expect(
            try await again.get(GeoClueTestClient.managerPath, Self.manager, "LocationServicesEnabled")
                == .boolean(false))
        try await Self.setSwitch(again, true)
        await again.close()
        #expect(try String(contentsOf: harness.file("services"), encoding: .utf8) == "enabled=true\n")

        harness.daemon?.stop()
        try "enabled=maybe\n".write(to: harness.file("services"), atomically: true, encoding: .utf8)
        try harness.startDaemon()
        let third = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in third.close() } }
        #expect(
            try await third.get(GeoClueTestClient.managerPath, Self.manager, "LocationServicesEnabled")
                == .boolean(false))
        #expect(harness.daemonLog.contains("neither enabled=true nor enabled=false"), "\(harness.daemonLog)")
        let aside = try FileManager.default.contentsOfDirectory(atPath: harness.directory.path)
            .filter { $0.hasPrefix("services.corrupt-") }
        #expect(aside.count == 1, "\(aside)")
    }

    @Test func withoutPolkitOnlyRootMaySwitch() async throws {
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        try harness.startDaemon()
        let cli = try ProjectPaths.product("whereabouts").path
        let refused = try Unprivileged.run(
            [cli, "services", "off"], environment: harness.bus.environment, in: harness.directory)
        #expect(refused.status == 4, "\(refused.output)")
        #expect(refused.output.contains("only root may manage location"), "\(refused.output)")
        let read = try Unprivileged.run([cli, "services"], environment: harness.bus.environment, in: harness.directory)
        #expect(read.status == 0 && read.output == "on\n", "everyone may read the switch: \(read.output)")
        let switched = try Unprivileged.run(
            [cli, "services", "off"], asUser: nil, environment: harness.bus.environment, in: harness.directory)
        #expect(switched.status == 0 && switched.output == "off\n", "\(switched.output)")
    }

    /// A rule answering `result` when `nobody` asks for the management action.
    static func managementRule(_ result: String) -> [String: String] {
        [
            "10-test.rules": """
            polkit.addRule(function(action, subject) {
                if (action.id == "io.github.whereabouts1.manage" && subject.user == "nobody") {
                    return polkit.Result.\(result);
                }
            });
            """
        ]
    }

    @Test func withPolkitTheManagementActionDecides() async throws {
        let allowed = try PolkitAuthorisationTests.Setup(rules: Self.managementRule("YES"))
        defer { allowed.stop() }
        let off = try allowed.cli(["services", "off"])
        #expect(off.status == 0 && off.output == "off\n", "\(off.output)\n\(allowed.harness.daemonLog)")
        let located = try allowed.cli(["locate"])
        #expect(located.status == 5, "\(located.output)")
        #expect(located.output.contains("location services are disabled"), "\(located.output)")
        allowed.stop()

        let refused = try PolkitAuthorisationTests.Setup(rules: Self.managementRule("NO"))
        defer { refused.stop() }
        let denied = try refused.cli(["services", "off"])
        #expect(denied.status == 4, "\(denied.output)")
        let read = try refused.cli(["services"])
        #expect(read.output == "on\n", "\(read.output)")
    }
}
