import DBus
import Foundation
import Loop
import TestBasics
import TestSupport
import Testing

/// `whereabouts replay FILE` and `io.github.whereabouts1.Manager.Simulate`: a recorded track in the place of every
/// provider, with the management authorisation.
@Suite("Simulated locations from a recorded track")
struct SimulationTests {
    static let manager = "io.github.whereabouts1.Manager"

    /// The daemon with the static source and a 6-fix track (1 s apart) beside it.
    static func harness() throws -> DaemonHarness {
        let harness = try DaemonHarness(
            config: staticConfig, files: ["geolocation": staticFile, "track.nmea": nmeaTrack(count: 6)])
        try harness.startDaemon()
        return harness
    }

    static func cli(_ harness: DaemonHarness, _ arguments: [String], asUser user: String? = nil) throws -> CommandResult
    {
        try Unprivileged.run(
            [try ProjectPaths.product("whereabouts").path] + arguments, asUser: user,
            environment: harness.bus.environment, in: harness.directory)
    }

    /// `whereabouts replay` of the harness's six-fix track at 5× speed, which must succeed; returns when it ended.
    static func replayTrack(_ harness: DaemonHarness) throws -> CommandResult {
        let played = try cli(harness, ["replay", harness.file("track.nmea").path, "--speed", "5"])
        #expect(played.status == 0, "\(played.output)\n\(harness.daemonLog)")
        return played
    }

    @BusActor
    static func simulatedFixes(_ app: GeoClueTestClient) async throws -> [[String: DBusValue]] {
        var fixes: [[String: DBusValue]] = []
        for update in app.locationUpdates {
            if let values = try? await app.getAll(update.new, "io.github.whereabouts1.Location"),
                values["Simulated"] == .boolean(true)
            {
                fixes.append(values)
            }
        }
        return fixes
    }

    /// Waits until the latest fix the client was given is the static source's again.
    @BusActor
    static func waitForStaticFix(_ app: GeoClueTestClient) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        // A slow test process may ask for an object the daemon has already released: that is "not yet", too.
        while (try? await app.latestLocation())?["Latitude"] != .double(48.8584) {
            guard ContinuousClock.now < deadline else {
                throw TestEnvironmentError("the static source did not serve again")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func aTrackTakesThePlaceOfTheProvidersUntilItEnds() async throws {
        let harness = try Self.harness()
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        _ = try await app.startedClient()
        _ = try await app.waitForUpdates(1)
        let before = await app.locationUpdates.count
        let played = try Self.replayTrack(harness)
        #expect(played.output.contains("simulation finished"), "\(played.output)")
        // A client keeps only its newest Location objects, so the test counts signals and reads what remains. The
        // CLI can see SimulationEnded before this connection has read the last LocationUpdated sent to it.
        _ = try await app.waitForUpdates(before + 3)
        let simulated = try await Self.simulatedFixes(app)
        #expect(!simulated.isEmpty, "no simulated fix is readable")
        for fix in simulated {
            #expect(abs((fix["Latitude"]?.double ?? 0) - 48.0) < 0.001, "\(fix)")
            #expect(fix["Provider"] == .string("replay"))
        }
        #expect(try await app.get(GeoClueTestClient.managerPath, Self.manager, "Simulating") == .boolean(false))
        try await Self.waitForStaticFix(app)
    }

    // Older Location objects released when their grace period ends, to the millisecond:
    // ServiceInProcessTests/ClientTimingTests.swift.

    @Test @BusActor func aLoopingSimulationEndsWhenItsOwnerGoesAway() async throws {
        let harness = try Self.harness()
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        let player = try ChildProcess(
            try ProjectPaths.product("whereabouts"), ["replay", harness.file("track.nmea").path, "--loop"],
            environment: harness.bus.environment, logFile: harness.file("replay.log"))
        try await app.waitFor("the simulation to start") {
            app.signals.contains {
                $0.member == "PropertiesChanged" && $0.arguments().first?.string == Self.manager
                    && $0.arguments()[1].stringKeyedEntries?["Simulating"] == .boolean(true)
            }
        }
        #expect(try await app.get(GeoClueTestClient.managerPath, Self.manager, "Simulating") == .boolean(true))
        let providers = try await app.get(GeoClueTestClient.managerPath, Self.manager, "Providers")
        #expect(providers.elements?.last?.fields?.first == .string("simulation"), "\(providers)")
        player.stop()
        try await app.waitFor("the simulation to end with its owner", timeout: .seconds(5)) {
            app.announcedSimulating == [true, false]
        }
        #expect(try await app.get(GeoClueTestClient.managerPath, Self.manager, "Simulating") == .boolean(false))
        #expect(try await app.providerRows().map(\.kind).contains("simulation") == false)
    }

    @Test func badTracksAndBadOptionsAreRefusedWithTheReason() async throws {
        let harness = try Self.harness()
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        await expectDBusError("org.freedesktop.DBus.Error.InvalidArgs", containing: "bad.nmea") {
            _ = try await app.call(
                GeoClueTestClient.managerPath, Self.manager, "Simulate",
                [.string("$GPRMC,garbage*00\r\nnot a track\n"), .vardict(["name": .string("bad.nmea")])])
        }
        await expectDBusError("org.freedesktop.DBus.Error.InvalidArgs", containing: "speed") {
            _ = try await app.call(
                GeoClueTestClient.managerPath, Self.manager, "Simulate",
                [.string(nmeaTrack(count: 3)), .vardict(["speed": .double(-1)])])
        }
        await expectDBusError("org.freedesktop.DBus.Error.InvalidArgs", containing: "unknown or mistyped option") {
            _ = try await app.call(
                GeoClueTestClient.managerPath, Self.manager, "Simulate",
                [.string(nmeaTrack(count: 3)), .vardict(["speed": .string("fast")])])
        }
        try "no fixes here\n".write(to: harness.file("empty.nmea"), atomically: true, encoding: .utf8)
        let refused = try Self.cli(harness, ["replay", harness.file("empty.nmea").path])
        #expect(refused.status == 1, "\(refused.output)")
        #expect(refused.output.contains("empty.nmea"), "\(refused.output)")
        let missing = try Self.cli(harness, ["replay", harness.file("absent.nmea").path])
        #expect(missing.status == 1 && missing.output.contains("cannot open"), "\(missing.output)")
        #expect(try await app.get(GeoClueTestClient.managerPath, Self.manager, "Simulating") == .boolean(false))
    }

    @Test func simulatingNeedsTheManagementAuthorisation() async throws {
        let harness = try Self.harness()
        defer { harness.stop() }
        let refused = try Self.cli(harness, ["replay", harness.file("track.nmea").path], asUser: "nobody")
        #expect(refused.status == 4, "\(refused.output)")

        let allowed = try PolkitAuthorisationTests.Setup(rules: ServicesSwitchTests.managementRule("YES"))
        defer { allowed.stop() }
        let track = FileManager.default.temporaryDirectory.appendingPathComponent(
            "whereabouts-\(UUID().uuidString).nmea")
        try nmeaTrack(count: 3).write(to: track, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: track) }
        let played = try allowed.cli(["replay", track.path, "--speed", "20"])
        #expect(played.status == 0, "\(played.output)\n\(allowed.harness.daemonLog)")
        #expect(played.output.contains("simulation finished"), "\(played.output)")
    }
}
