import DBus
import Foundation
import Loop
import TestSupport
import Testing

/// GeoClue agents: `MaxAccuracyLevel` caps every client of the agent's user, `AuthorizeApp` decides for apps
/// nobody decided about, and an agent that never answers is a clear error. The test process is root; without
/// polkit, an app with no entry in the configuration and no stored decision is `notDetermined` while root has an
/// agent.
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
        #expect(await agent.asked.map(\.app) == [Self.app])
        #expect(await agent.asked.map(\.level) == [8])

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

    @Test func authorizeAppDecidesForAnAppNobodyDecidedAbout() async throws {
        let setup = try Setup()
        defer { setup.stop() }
        let agent = try await GeoClueTestAgent(bus: setup.harness.bus, answer: .allow(4))
        defer { Task { @BusActor in agent.close() } }
        try await agent.register()

        let allowed = try await GeoClueTestClient(bus: setup.harness.bus)
        defer { Task { @BusActor in allowed.close() } }
        let client = try await allowed.startedClient(desktopId: Self.app)
        _ = try await allowed.waitForUpdates(1)
        #expect(try await Self.latest(allowed).accuracy >= 15_000, "served at the level the agent allowed")
        #expect(
            try await allowed.get(client, Self.client, "AuthorisationStatus") == .string("notDetermined"),
            "the agent's answer is not stored")

        await agent.setAnswer(.refuse)
        let refused = try await GeoClueTestClient(bus: setup.harness.bus)
        defer { Task { @BusActor in refused.close() } }
        await expectDBusError(DBusError.Name.accessDenied, containing: "Agent rejected '\(Self.app)' for user '0'") {
            _ = try await refused.startedClient(desktopId: Self.app)
        }
        #expect(await agent.asked.count == 2)
    }

    @Test func requestAuthorisationUsesTheAgentAsThePromptAndStoresTheOutcome() async throws {
        let setup = try Setup()
        defer { setup.stop() }
        let agent = try await GeoClueTestAgent(bus: setup.harness.bus, answer: .allow(8))
        defer { Task { @BusActor in agent.close() } }
        try await agent.register()
        let app = try await GeoClueTestClient(bus: setup.harness.bus)
        defer { Task { @BusActor in app.close() } }
        let client = try await app.getClient()
        try await app.set(client, GeoClueTestClient.clientInterface, "DesktopId", .string(Self.app))
        #expect(try await app.call(client, Self.client, "CheckAuthorisation") == [.string("notDetermined")])
        let granted = try await app.call(
            client, Self.client, "RequestAuthorisation", [.string("when-in-use"), .vardict([:])])
        #expect(granted == [.string("authorisedWhenInUse")])
        #expect(
            try String(contentsOf: setup.harness.file("grants"), encoding: .utf8).contains(
                "0\t\(Self.app)\twhen-in-use\tprecise"))

        await agent.setAnswer(.refuse)
        let other = "org.example.Tracker"
        try await app.set(client, GeoClueTestClient.clientInterface, "DesktopId", .string(other))
        let refused = try await app.call(
            client, Self.client, "RequestAuthorisation", [.string("always"), .vardict([:])])
        #expect(refused == [.string("denied")])
        #expect(try String(contentsOf: setup.harness.file("grants"), encoding: .utf8).contains("0\t\(other)\tdenied"))
        #expect(await agent.asked.map(\.app) == [Self.app, other])
    }

    @Test func anAgentThatNeverAnswersIsAClearErrorWithinItsTimeout() async throws {
        let setup = try Setup(agentTimeoutMilliseconds: 1000)
        defer { setup.stop() }
        let agent = try await GeoClueTestAgent(bus: setup.harness.bus, answer: .never)
        defer { Task { @BusActor in agent.close() } }
        try await agent.register()
        let app = try await GeoClueTestClient(bus: setup.harness.bus)
        defer { Task { @BusActor in app.close() } }
        let began = ContinuousClock.now
        await expectDBusError(DBusError.Name.accessDenied, containing: "did not answer within") {
            _ = try await app.startedClient(desktopId: Self.app)
        }
        print("a silent agent was given up on after \(ContinuousClock.now - began)")
        let client = try await app.getClient()
        try await app.set(client, GeoClueTestClient.clientInterface, "DesktopId", .string(Self.app))
        await expectDBusError(DBusError.Name.failed, containing: "did not answer within") {
            _ = try await app.call(client, Self.client, "RequestAuthorisation", [.string("always"), .vardict([:])])
        }
    }
}
