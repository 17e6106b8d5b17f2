import DBus
import Foundation
import Loop
import TestSupport
import Testing

/// GeoClue agents: `MaxAccuracyLevel` caps every client of the agent's user, `AuthorizeApp` decides for sandboxed
/// apps nobody decided about (and, as in GeoClue, is never asked about a host app), and an agent that never
/// answers is a clear error. The test process is root; without polkit, a sandboxed app with no entry in the
/// configuration and no stored decision is `notDetermined` while root has an agent.
@Suite("GeoClue agents, end to end")
struct AgentTests {
    static let app = "org.example.Maps"
    static let client = "io.github.whereabouts1.Client"
    struct Setup {
        let harness: DaemonHarness
        let daemon: ChildProcess

        /// A daemon with the static source; `agentTimeoutMilliseconds` shortens how long it waits for an agent's
        /// answer (only for a silent agent: an agent that answers must not race a short timeout on a loaded machine).
        init(agentTimeoutMilliseconds: Int? = nil) throws {
            harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
            let environment = agentTimeoutMilliseconds.map { ["WHEREABOUTS_AGENT_TIMEOUT_MS": String($0)] } ?? [:]
            try harness.startDaemon(environment: environment)
            daemon = try #require(harness.daemon)
        }

        func stop() {
            daemon.stop()
            harness.stop()
        }
    }

    /// Numbers for the sandboxed apps' scopes.
    nonisolated(unsafe) static var scopes: UInt64 = 0

    /// `identity_client.py` with `steps` (its client's `DesktopId` left unset) as root's Flatpak app `appID`: under
    /// `bwrap` with its `/.flatpak-info`, in the `app-flatpak-…` scope of root's manager by which the daemon knows
    /// it; its output.
    static func sandboxedClient(_ setup: Setup, app appID: String, _ steps: [String]) throws -> String {
        scopes += 1
        let scope = try UnitCgroup(
            path: UnitCgroup.userUnitPath(
                uid: 0, slice: "app.slice",
                unit: UnitCgroup.flatpakScopeName(appID: appID, number: UInt64(getpid()) * 1000 + scopes)))
        defer { scope.remove() }
        let script = ProjectPaths.clients.appendingPathComponent("identity_client.py").path
        let command =
            scope.launcher
            + (try FlatpakSandbox.command(
                ["/usr/bin/python3", script, setup.harness.bus.address, "-"] + steps, asUser: "root",
                infoFile: try FlatpakSandbox.infoFile(appID, in: setup.harness.directory),
                shared: [setup.harness.directory, setup.harness.bus.directory], readOnly: [ProjectPaths.clients]))
        return try Unprivileged.run(
            command, asUser: nil, environment: setup.harness.bus.environment, in: setup.harness.directory, timeout: 30
        ).output
    }

    /// `Accuracy` and `Latitude` of the Location object the latest `LocationUpdated` announced.
    @BusActor
    static func latest(_ app: GeoClueTestClient) async throws -> (accuracy: Double, latitude: Double) {
        let location = try #require(try await app.latestLocation())
        return (try #require(location["Accuracy"]?.double), try #require(location["Latitude"]?.double))
    }

    /// Waits for `AvailabilityChanged` with `reason`.
    @BusActor
    static func waitForReason(_ app: GeoClueTestClient, _ reason: String) async throws {
        try await app.waitFor("AvailabilityChanged with reason \(reason)") {
            app.signals.contains { $0.member == "AvailabilityChanged" && $0.arguments().last?.string == reason }
        }
    }

    @Test func maxAccuracyLevelCapsARunningClientBothWays() async throws {
        let setup = try Setup()
        defer { setup.stop() }
        let agent = try await GeoClueTestAgent(bus: setup.harness.bus)
        try await agent.register()
        let app = try await GeoClueTestClient(bus: setup.harness.bus)
        defer { Task { @BusActor in app.close() } }
        let client = try await app.startedClient(desktopId: Self.app)
        _ = try await app.waitForUpdates(1)
        #expect(try await Self.latest(app) == (10, 48.8584))
        // A host app: GeoClue reads the agent's MaxAccuracyLevel for it, and never asks AuthorizeApp.
        #expect(await agent.asked.isEmpty)

        await agent.setMaxAccuracyLevel(4)
        _ = try await app.waitForUpdates(2)
        let coarse = try await Self.latest(app)
        #expect(coarse.accuracy >= 15_000, "city level: \(coarse)")
        #expect(coarse.latitude != 48.8584, "grid-snapped: \(coarse)")
        #expect(try await app.get(client, GeoClueTestClient.clientInterface, "Active") == .boolean(true))

        await agent.setMaxAccuracyLevel(8)
        _ = try await app.waitForUpdates(3)
        #expect(try await Self.latest(app) == (10, 48.8584))

        await agent.setMaxAccuracyLevel(0)
        try await Self.waitForReason(app, "agent-disabled")
        #expect(try await app.get(client, GeoClueTestClient.clientInterface, "Active") == .boolean(false))
        await expectDBusError(
            "io.github.whereabouts1.Error.PermissionDenied", containing: "Geolocation disabled for UID 0"
        ) {
            _ = try await app.call(client, Self.client, "RequestLocation", [.vardict(["timeout": .uint32(2000)])])
        }

        await agent.setMaxAccuracyLevel(6)
        try await Self.waitForReason(app, "agent-enabled")
        _ = try await app.waitForUpdates(4)
        #expect(try await Self.latest(app).accuracy >= 1_000, "street level")
        #expect(try await app.get(client, GeoClueTestClient.clientInterface, "Active") == .boolean(true))

        await agent.close()
        _ = try await app.waitForUpdates(5)
        #expect(try await Self.latest(app) == (10, 48.8584), "the cap goes with the agent")
    }

    @Test func authorizeAppDecidesForASandboxedAppNobodyDecidedAbout() async throws {
        let setup = try Setup()
        defer { setup.stop() }
        let agent = try await GeoClueTestAgent(bus: setup.harness.bus, answer: .allow(4))
        defer { Task { @BusActor in agent.close() } }
        try await agent.register()

        let allowed = try await onOwnThread {
            try Self.sandboxedClient(setup, app: Self.app, ["locate", "accuracy", "check"])
        }
        let lines = allowed.split(separator: "\n")
        #expect(lines.count == 3 && lines[0].hasPrefix("fix "), "\(allowed)")
        // Allowed city for an exact request: the agent limited the app, so its fix is on the city grid.
        #expect(lines.count == 3 && (Double(lines[1].dropFirst("accuracy ".count)) ?? 0) >= 15_000, "\(allowed)")
        #expect(lines.last == "status notDetermined", "the agent's answer is not stored: \(allowed)")
        #expect(await agent.asked.map(\.app) == [Self.app])
        #expect(await agent.asked.map(\.level) == [8])

        await agent.setAnswer(.refuse)
        let refused = try await onOwnThread { try Self.sandboxedClient(setup, app: Self.app, ["locate"]) }
        #expect(
            refused.hasPrefix(
                "refused org.freedesktop.DBus.Error.AccessDenied: Agent rejected '\(Self.app)' for user '0'"),
            "\(refused)")
        #expect(await agent.asked.count == 2)

        // A host app is let in as GeoClue lets it in, the refusing agent not asked.
        let host = try await GeoClueTestClient(bus: setup.harness.bus)
        defer { Task { @BusActor in host.close() } }
        let client = try await host.startedClient(desktopId: Self.app)
        _ = try await host.waitForUpdates(1)
        #expect(try await host.get(client, Self.client, "AuthorisationStatus") == .string("authorisedAlways"))
        #expect(await agent.asked.count == 2)
    }

    @Test func requestAuthorisationUsesTheAgentAsThePromptAndStoresTheOutcome() async throws {
        let setup = try Setup()
        defer { setup.stop() }
        let agent = try await GeoClueTestAgent(bus: setup.harness.bus, answer: .allow(8))
        defer { Task { @BusActor in agent.close() } }
        try await agent.register()
        let granted = try await onOwnThread {
            try Self.sandboxedClient(setup, app: Self.app, ["check", "request-when-in-use"])
        }
        #expect(granted == "status notDetermined\nstatus authorisedWhenInUse\n", "\(granted)")
        #expect(
            try String(contentsOf: setup.harness.file("grants"), encoding: .utf8).contains(
                "0\t\(Self.app)\twhen-in-use\tprecise\tverified"))

        await agent.setAnswer(.refuse)
        let other = "org.example.Tracker"
        let refused = try await onOwnThread { try Self.sandboxedClient(setup, app: other, ["request-always"]) }
        #expect(refused == "status denied\n", "\(refused)")
        #expect(try String(contentsOf: setup.harness.file("grants"), encoding: .utf8).contains("0\t\(other)\tdenied"))
        #expect(await agent.asked.map(\.app) == [Self.app, other])
    }

    @Test func anAgentThatNeverAnswersIsAClearErrorWithinItsTimeout() async throws {
        let setup = try Setup(agentTimeoutMilliseconds: 1000)
        defer { setup.stop() }
        let agent = try await GeoClueTestAgent(bus: setup.harness.bus, answer: .never)
        defer { Task { @BusActor in agent.close() } }
        try await agent.register()
        let began = ContinuousClock.now
        let output = try await onOwnThread {
            try Self.sandboxedClient(setup, app: Self.app, ["locate", "request-always"])
        }
        print("a silent agent was given up on after \(ContinuousClock.now - began)")
        let lines = output.split(separator: "\n")
        #expect(
            lines.count == 2 && lines[0].hasPrefix("refused org.freedesktop.DBus.Error.AccessDenied")
                && lines[0].contains("did not answer within"), "\(output)")
        #expect(
            lines.count == 2 && lines[1].hasPrefix("refused org.freedesktop.DBus.Error.Failed")
                && lines[1].contains("did not answer within"), "\(output)")
    }
}
