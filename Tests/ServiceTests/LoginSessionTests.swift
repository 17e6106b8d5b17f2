import DBus
import Foundation
import Glibc
import Loop
import TestSupport
import Testing

/// *When in use* follows the app's login session through logind (python-dbusmock's logind template); *always*
/// ignores sessions. The test process is root, so the grants come from a stored decision without polkit.
@Suite("Login sessions and when-in-use, end to end")
struct LoginSessionTests {
    static let whenInUseApp = "org.example.WhenInUse"
    static let alwaysApp = "org.example.Always"
    static let client = "io.github.whereabouts1.Client"
    static let grants = """
        # whereabouts grants 1
        0\t\(whenInUseApp)\twhen-in-use\tprecise
        0\t\(alwaysApp)\talways\tprecise

        """

    /// A bus with the logind mock (session `c1` of root, this test process in it) and the daemon.
    struct Setup {
        let logind: LogindMock
        let harness: DaemonHarness

        init(sessionActive: Bool = true) throws {
            let bus = try PrivateBus(extraPolicy: LogindMock.busPolicy)
            logind = try LogindMock(bus: bus)
            try logind.addSession("c1", uid: 0, user: "root", active: sessionActive)
            try logind.mapProcesses([getpid(): "c1"])
            harness = try DaemonHarness(
                config: staticConfig, files: ["geolocation": staticFile, "grants": LoginSessionTests.grants], bus: bus)
            try harness.startDaemon()
        }

        func stop() {
            harness.stop()
            logind.stop()
        }
    }

    /// The values of `Active` announced for `client`, in order.
    @BusActor
    static func activeValues(_ app: GeoClueTestClient, _ client: ObjectPath) -> [Bool] {
        app.signals.compactMap { message in
            guard message.path == client, message.member == "PropertiesChanged",
                message.arguments().first?.string == GeoClueTestClient.clientInterface
            else { return nil }
            return message.arguments()[1].stringKeyedEntries?["Active"]?.bool
        }
    }

    /// Waits until the values of `Active` announced for `client` are `values`.
    @BusActor
    static func waitForActive(_ app: GeoClueTestClient, _ client: ObjectPath, _ values: [Bool]) async throws {
        try await app.waitFor("Active to be announced as \(values)") { activeValues(app, client) == values }
    }

    /// The reasons of the `AvailabilityChanged` signals of `client`, in order.
    @BusActor
    static func reasons(_ app: GeoClueTestClient, _ client: ObjectPath) -> [String] {
        app.signals.filter { $0.path == client && $0.member == "AvailabilityChanged" }.compactMap {
            $0.arguments().last?.string
        }
    }

    @BusActor
    static func startClient(_ app: GeoClueTestClient, _ desktopId: String) async throws(DBusError) -> ObjectPath {
        let client = try await app.createClient()
        try await app.set(client, GeoClueTestClient.clientInterface, "DesktopId", .string(desktopId))
        try await app.set(client, GeoClueTestClient.clientInterface, "RequestedAccuracyLevel", .uint32(8))
        _ = try await app.call(client, GeoClueTestClient.clientInterface, "Start")
        return client
    }

    @Test func aWhenInUseClientIsHeldWhileItsSessionIsInactive() async throws {
        let setup = try Setup()
        defer { setup.stop() }
        let app = try await GeoClueTestClient(bus: setup.harness.bus)
        defer { Task { @BusActor in app.close() } }
        let whenInUse = try await Self.startClient(app, Self.whenInUseApp)
        let always = try await Self.startClient(app, Self.alwaysApp)
        _ = try await app.waitForUpdates(2)
        #expect(try await app.get(whenInUse, Self.client, "AuthorisationStatus") == .string("authorisedWhenInUse"))

        let began = ContinuousClock.now
        try setup.logind.setActive("c1", false)
        try await Self.waitForActive(app, whenInUse, [true, false])
        print("when-in-use client stopped \(ContinuousClock.now - began) after the session became inactive")
        #expect(await Self.reasons(app, whenInUse) == ["session-inactive"])
        #expect(try await app.get(whenInUse, Self.client, "Available") == .boolean(false))
        #expect(try await app.get(always, GeoClueTestClient.clientInterface, "Active") == .boolean(true))
        #expect(await Self.reasons(app, always).isEmpty, "an always client ignores sessions")
        await expectDBusError(
            "io.github.whereabouts1.Error.PermissionDenied", containing: "login session is not active"
        ) {
            _ = try await app.call(whenInUse, Self.client, "RequestLocation", [.vardict(["timeout": .uint32(2000)])])
        }
        let other = try await app.createClient()
        try await app.set(other, GeoClueTestClient.clientInterface, "DesktopId", .string(Self.whenInUseApp))
        await expectDBusError(DBusError.Name.accessDenied, containing: "login session is not active") {
            _ = try await app.call(other, GeoClueTestClient.clientInterface, "Start")
        }

        let updatesWhileInactive = await app.locationUpdates.count
        try setup.logind.setActive("c1", true)
        try await Self.waitForActive(app, whenInUse, [true, false, true])
        #expect(await Self.reasons(app, whenInUse) == ["session-inactive", "session-active"])
        _ = try await app.waitForUpdates(updatesWhileInactive + 1)
        #expect(try await app.get(whenInUse, Self.client, "Available") == .boolean(true))
        #expect(
            try await app.get(other, GeoClueTestClient.clientInterface, "Active") == .boolean(false),
            "a client whose Start failed is not started by the session")
    }

    @Test func aWhenInUseClientStartedInAnInactiveSessionIsRefused() async throws {
        let setup = try Setup(sessionActive: false)
        defer { setup.stop() }
        let app = try await GeoClueTestClient(bus: setup.harness.bus)
        defer { Task { @BusActor in app.close() } }
        await expectDBusError(
            DBusError.Name.accessDenied,
            containing: "'\(Self.whenInUseApp)' is authorised when in use, and its login session is not active"
        ) {
            _ = try await Self.startClient(app, Self.whenInUseApp)
        }
        _ = try await Self.startClient(app, Self.alwaysApp)
        _ = try await app.waitForUpdates(1)
    }

    @Test func aProcessOutsideAnySessionIsRefusedWhenInUse() async throws {
        let setup = try Setup()
        defer { setup.stop() }
        // The CLI runs in a process of its own, which the mock puts in no session; its user has no graphical one.
        let cli = try ProjectPaths.product("whereabouts").path
        let refused = try Unprivileged.run(
            [cli, "locate", "--desktop-id", Self.whenInUseApp], asUser: nil, environment: setup.harness.bus.environment,
            in: setup.harness.directory)
        #expect(refused.status == 4, "\(refused.output)")
        #expect(refused.output.contains("its process is in no login session"), "\(refused.output)")
        let located = try Unprivileged.run(
            [cli, "locate", "--desktop-id", Self.alwaysApp], asUser: nil, environment: setup.harness.bus.environment,
            in: setup.harness.directory)
        #expect(located.status == 0, "an always app needs no session: \(located.output)")

        try setup.logind.mapProcesses([:])
        let app = try await GeoClueTestClient(bus: setup.harness.bus)
        defer { Task { @BusActor in app.close() } }
        await expectDBusError(DBusError.Name.accessDenied, containing: "its process is in no login session") {
            _ = try await Self.startClient(app, Self.whenInUseApp)
        }
    }

    @Test func withoutLogindWhenInUseHolds() async throws {
        let harness = try DaemonHarness(
            config: staticConfig, files: ["geolocation": staticFile, "grants": Self.grants])
        defer { harness.stop() }
        try harness.startDaemon()
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        _ = try await Self.startClient(app, Self.whenInUseApp)
        _ = try await app.waitForUpdates(1)
        _ = try await Self.startClient(app, Self.whenInUseApp)
        _ = try await app.waitForUpdates(2)
        let notices = harness.daemonLog.split(separator: "\n").filter { $0.contains("logind is not on the bus") }
        #expect(notices.count == 1, "one log line says so: \(harness.daemonLog)")
    }

    @Test func aMisbehavingLogindDeniesWithAClearErrorAndHangsNothing() async throws {
        let setup = try Setup()
        defer { setup.stop() }
        try setup.logind.addMethod("GetSessionByPID", inSignature: "u", outSignature: "s", code: "ret = 'nonsense'")
        let app = try await GeoClueTestClient(bus: setup.harness.bus)
        defer { Task { @BusActor in app.close() } }
        await expectDBusError(DBusError.Name.accessDenied, containing: "cannot check the login session") {
            _ = try await Self.startClient(app, Self.whenInUseApp)
        }
        _ = try await Self.startClient(app, Self.alwaysApp)
        _ = try await app.waitForUpdates(1)
        #expect(setup.harness.daemon?.isRunning == true)
    }
}
