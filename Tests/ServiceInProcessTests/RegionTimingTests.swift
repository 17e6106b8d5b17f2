import DBus
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing
import WhereaboutsCore

/// Geofencing in a service in the test's process, its time on a manual clock: regions decided by the fixes the
/// service is handed, dwell, the undecided timeout and expiry reached exactly, the level the regions ask of the
/// providers, and what happens while the app has no client.
@Suite @BusActor struct RegionTimingTests {
    static let ours = BusNames.Whereabouts.clientInterface
    static let geoClue = BusNames.GeoClue.clientInterface

    /// A client of app `regions` on its own connection.
    static func regionsClient(_ rig: InProcessService) async throws -> (GeoClueTestClient, ObjectPath) {
        let app = try await rig.app()
        let client = try await app.getClient()
        try await app.set(client, geoClue, "DesktopId", .string("regions"))
        return (app, client)
    }

    /// `AddRegion` of a circle of `radius` metres `metresNorth` north of 51°N 10°E (where the rig's fixes are).
    @discardableResult
    static func addRegion(
        _ app: GeoClueTestClient, _ client: ObjectPath, _ id: String, metresNorth: Double = 0, radius: Double = 200,
        options: [String: DBusValue] = [:]
    ) async throws -> Double {
        let reply = try await app.call(
            client, ours, "AddRegion",
            [.string(id), .double(51 + metresNorth / 111_195), .double(10), .double(radius), .vardict(options)])
        return try #require(reply.first?.double)
    }

    /// The states `RegionChanged` reported for `id` so far, in order.
    static func states(_ app: GeoClueTestClient, _ id: String) -> [String] {
        app.signals.filter { $0.member == "RegionChanged" }.map { $0.arguments() }
            .filter { $0.first?.string == id }.compactMap { $0[1].string }
    }

    @Test func aRegionIsDecidedByTheFixesWithHysteresis() async throws {
        let rig = try await InProcessService()
        defer { rig.stop() }
        let (app, client) = try await Self.regionsClient(rig)
        defer { app.close() }
        #expect(try await Self.addRegion(app, client, "home", radius: 20) == 100)
        rig.deliver(northOf: 0)
        try await app.waitFor("entering") { Self.states(app, "home") == ["inside"] }
        // On the boundary, within its accuracy: the state holds.
        rig.deliver(northOf: 100)
        rig.deliver(northOf: 98)
        rig.deliver(northOf: 102)
        rig.deliver(northOf: 300)
        try await app.waitFor("leaving") { Self.states(app, "home") == ["inside", "outside"] }
        let signal = try #require(app.signals.last { $0.member == "RegionChanged" })
        #expect(signal.path == client)
        let arguments = signal.arguments()
        #expect(arguments[2] == .uint64(UInt64(rig.clock.wallNow.microseconds / 1000)))
        #expect(abs((arguments[3].double ?? 0) - (51 + 300 / 111_195)) < 1e-9 && arguments[5] == .double(5))
    }

    @Test func dwellingIsReportedExactlyWhenItsTimeHasPassedSinceTheEntry() async throws {
        let rig = try await InProcessService()
        defer { rig.stop() }
        let (app, client) = try await Self.regionsClient(rig)
        defer { app.close() }
        try await Self.addRegion(app, client, "office", options: ["dwell": .uint32(300)])
        rig.deliver(northOf: 0)
        try await app.waitFor("entering") { Self.states(app, "office") == ["inside"] }
        rig.advance(by: .seconds(299))
        _ = try await app.get(client, Self.ours, "Available")
        #expect(Self.states(app, "office") == ["inside"])
        rig.advance(by: .seconds(1))
        try await app.waitFor("dwelling") { Self.states(app, "office") == ["inside", "dwelling"] }
    }

    @Test func noDecisionWithinAMinuteIsReportedAsUnknownOnce() async throws {
        let rig = try await InProcessService()
        defer { rig.stop() }
        let (app, client) = try await Self.regionsClient(rig)
        defer { app.close() }
        try await Self.addRegion(app, client, "far")
        rig.advance(by: .milliseconds(59_999))
        _ = try await app.get(client, Self.ours, "Available")
        #expect(Self.states(app, "far").isEmpty)
        rig.advance(by: .milliseconds(1))
        try await app.waitFor("unknown") { Self.states(app, "far") == ["unknown"] }
        rig.advance(by: .seconds(600))
        _ = try await app.get(client, Self.ours, "Available")
        #expect(Self.states(app, "far") == ["unknown"])
        // A fix too coarse for the region decides nothing; a good one decides.
        rig.service.deliver(
            Fix(
                latitude: 51, longitude: 10, horizontalAccuracy: 500, timestamp: rig.clock.wallNow, provider: .static,
                description: "coarse"))
        rig.deliver(northOf: 5000)
        try await app.waitFor("outside") { Self.states(app, "far") == ["unknown", "outside"] }
    }

    @Test func aRegionExpiresExactlyAtItsTime() async throws {
        let rig = try await InProcessService()
        defer { rig.stop() }
        let (app, client) = try await Self.regionsClient(rig)
        defer { app.close() }
        let expiry = UInt64(rig.clock.wallNow.seconds + 100)
        try await Self.addRegion(app, client, "brief", options: ["expires": .uint64(expiry)])
        rig.deliver(northOf: 0)
        let removals = { app.signals.filter { $0.member == "RegionsRemoved" }.map { $0.arguments() } }
        rig.advance(by: .milliseconds(99_999))
        _ = try await app.get(client, Self.ours, "Available")
        #expect(removals().isEmpty)
        rig.advance(by: .milliseconds(1))
        try await app.waitFor("RegionsRemoved") { removals() == [[.strings(["brief"]), .string("expired")]] }
        let listed = try await app.call(client, Self.ours, "ListRegions")
        #expect(listed == [.array(element: "(sddda{sv})", [])])
    }

    /// Events dropped past an app's share are logged naming the user and the app, a few lines at once and then one
    /// every 2 s, whatever the app's regions go through: one user cannot flood the journal.
    @Test func droppedPendingEventsAreLoggedRateLimitedNamingUserAndApp() async throws {
        let rig = try await InProcessService()
        defer { rig.stop() }
        let (app, client) = try await Self.regionsClient(rig)
        try await Self.addRegion(app, client, "blink")
        app.close()
        let deadline = ContinuousClock.now + .seconds(10)
        while rig.service.clientCount > 0 {
            guard ContinuousClock.now < deadline else { throw TestEnvironmentError("the app's client stayed") }
            try await Task.sleep(for: .milliseconds(5))
        }
        for step in 0..<400 {
            rig.deliver(northOf: step % 2 == 0 ? 0 : 5000)
            rig.advance(by: .milliseconds(10))
        }
        let dropped = rig.log.lines.filter { $0.contains("pending event(s)") }
        #expect(!dropped.isEmpty && dropped.count <= 8, "\(dropped.count) lines: \(dropped.suffix(3))")
        #expect(dropped.allSatisfy { $0.contains("of 'regions' (user \(getuid()))") }, "\(dropped.first ?? "")")
    }

    @Test func theRegionsAskForTheCoarsestLevelThatCanDecideTheNearestBoundary() async throws {
        let rig = try await InProcessService()
        defer { rig.stop() }
        let (app, client) = try await Self.regionsClient(rig)
        defer { app.close() }
        rig.deliver(northOf: 0)
        // A town 6 km across, its boundary 25 km away: city level decides it; 7 km away, Wi-Fi; 100 m away,
        // satellites. A 200 m region needs Wi-Fi wherever it is, as a city-level fix cannot decide it.
        try await Self.addRegion(app, client, "away", metresNorth: 31_000, radius: 6000)
        #expect(rig.demands.last == .city)
        let manager = BusNames.Whereabouts.managerInterface
        #expect(try await app.get(GeoClueTestClient.managerPath, manager, "RegionLevel") == .uint32(4))
        rig.deliver(northOf: 18_000)
        #expect(rig.demands.last == .street)
        rig.deliver(northOf: 24_900)
        #expect(rig.demands.last == .exact)
        rig.deliver(northOf: 0)
        #expect(rig.demands.last == .city)
        try await Self.addRegion(app, client, "small", metresNorth: -40_000)
        #expect(rig.demands.last == .street)
        #expect(try await app.get(GeoClueTestClient.managerPath, manager, "WatchedRegions") == .uint32(2))
        _ = try await app.call(client, Self.ours, "RemoveRegion", [.string("small")])
        _ = try await app.call(client, Self.ours, "RemoveRegion", [.string("away")])
        #expect(rig.demands.last == .some(nil))
    }

    @Test func whatHappensWithoutAClientIsKeptForTheNext() async throws {
        let rig = try await InProcessService()
        defer { rig.stop() }
        let (first, client) = try await Self.regionsClient(rig)
        try await Self.addRegion(first, client, "home")
        rig.deliver(northOf: 0)
        try await first.waitFor("entering") { Self.states(first, "home") == ["inside"] }
        first.close()
        try await rig.waitUntil("the client is gone") { rig.service.clientCount == 0 }
        rig.deliver(northOf: 1000)
        rig.deliver(northOf: 0)
        let (second, again) = try await Self.regionsClient(rig)
        defer { second.close() }
        let pending = try await second.call(again, Self.ours, "PendingRegionEvents")
        let rows = pending.first?.elements ?? []
        #expect(rows.map { $0.fields?[1].string } == ["outside", "inside"])
        #expect(try await second.call(again, Self.ours, "PendingRegionEvents") == [.array(element: "(sstddd)", [])])
    }
}
