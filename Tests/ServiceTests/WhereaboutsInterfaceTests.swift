import DBus
import Foundation
import Loop
import TestSupport
import Testing

@Suite("io.github.whereabouts1 interfaces, end to end")
@BusActor
struct WhereaboutsInterfaceTests {
    let ours = "io.github.whereabouts1.Client"
    let oursLocation = "io.github.whereabouts1.Location"
    let oursManager = "io.github.whereabouts1.Manager"

    func request(_ app: GeoClueTestClient, _ client: ObjectPath, _ options: [String: DBusValue]) async throws(DBusError)
        -> ObjectPath
    {
        try await app.call(client, ours, "RequestLocation", [.vardict(options)])[0].objectPath!
    }

    func named(_ app: GeoClueTestClient, desktopId: String = "whereabouts-test") async throws -> ObjectPath {
        let client = try await app.getClient()
        try await app.set(client, GeoClueTestClient.clientInterface, "DesktopId", .string(desktopId))
        try await app.set(client, GeoClueTestClient.clientInterface, "RequestedAccuracyLevel", .uint32(8))
        return client
    }

    @Test func requestLocationAnswersWithOneFixWithoutStart() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let app = try await service.client()
        defer { app.close() }
        let client = try await named(app)
        let answer = try await request(app, client, ["timeout": .uint32(5000)])
        #expect(answer.rawValue.hasPrefix("\(client)/Request/"))
        let values = try await app.getAll(answer, oursLocation)
        #expect(values["Latitude"] == .double(48.8584))
        #expect(values["HorizontalAccuracy"] == .double(10))
        #expect(values["Altitude"] == .double(35))
        #expect(values["Provider"] == .string("static"))
        #expect(values["Simulated"] == .boolean(false))
        #expect(values["Stale"] == .boolean(false))
        #expect(values["Speed"]?.double?.isNaN == true)
        #expect(values["Course"]?.double?.isNaN == true)
        #expect((values["TimestampMilliseconds"]?.uint64 ?? 0) > 1_700_000_000_000)
        #expect(try await app.get(client, GeoClueTestClient.clientInterface, "Active") == .boolean(false))
        #expect(app.locationUpdates.isEmpty)
        // The GeoClue view of the same object uses GeoClue's sentinels.
        #expect(try await app.get(answer, GeoClueTestClient.locationInterface, "Speed") == .double(-1))
    }

    @Test func aRequestWithNoProviderTimesOutAtTheRequestedTime() async throws {
        let harness = try DaemonHarness(config: "[agent]\nwhitelist=gnome-shell\n")
        defer { harness.stop() }
        try harness.startDaemon()
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let client = try await named(app)
        #expect(try await app.get(client, ours, "Available") == .boolean(false))
        let began = ContinuousClock.now
        await expectDBusError("io.github.whereabouts1.Error.Timeout") {
            _ = try await request(app, client, ["timeout": .uint32(400)])
        }
        let waited = ContinuousClock.now - began
        // Never before the requested time; the upper bound only tells it from the 30 s default, with room for a
        // loaded or sanitized run (4.6 s was seen under AddressSanitizer with the suite running in parallel).
        #expect(waited >= .milliseconds(390) && waited < .seconds(28), "waited \(waited)")
        #expect(try await app.get(client, ours, "LastLocation") == .objectPath(.root))
    }

    @Test func maximumAgeAnswersFromTheCacheAndLastLocationIsStale() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let app = try await service.client()
        defer { app.close() }
        let client = try await named(app)
        _ = try await request(app, client, [:])
        let before = try await app.get(GeoClueTestClient.managerPath, oursManager, "Providers")
        #expect(before.elements?.first?.fields?[3] == .boolean(false), "the static source stops after the request")
        let cached = try await request(app, client, ["maximum-age": .uint32(600_000), "timeout": .uint32(1)])
        #expect(try await app.get(cached, oursLocation, "Latitude") == .double(48.8584))
        let last = try await app.get(client, ours, "LastLocation").objectPath!
        #expect(last.rawValue == "\(client)/LastLocation")
        #expect(try await app.get(last, oursLocation, "Stale") == .boolean(true))
        let intruder = try await service.client()
        defer { intruder.close() }
        await expectDBusError(DBusError.Name.accessDenied) {
            _ = try await intruder.get(last, oursLocation, "Latitude")
        }
        await expectDBusError(DBusError.Name.invalidArgs, containing: "unknown or mistyped option") {
            _ = try await request(app, client, ["timeout": .string("soon")])
        }
    }

    @Test func aRefusedAppGetsPermissionDenied() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let app = try await service.client()
        defer { app.close() }
        let client = try await named(app, desktopId: "denied-app")
        await expectDBusError(
            "io.github.whereabouts1.Error.PermissionDenied", containing: "disallowed by configuration"
        ) {
            _ = try await request(app, client, [:])
        }
    }

    @Test func managerListsProvidersAndActiveApps() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let observer = try await service.client()
        defer { observer.close() }
        let app = try await service.client()
        defer { app.close() }
        let values = try await observer.getAll(GeoClueTestClient.managerPath, oursManager)
        #expect(values["LocationServicesEnabled"] == .boolean(true))
        #expect(values["ActiveApps"] == .strings([]))
        #expect(
            values["Providers"]
                == .array(
                    element: "(subba{sv})",
                    [.structure([.string("static"), .uint32(1), .boolean(true), .boolean(false), .vardict([:])])]))
        let client = try await app.startedClient(desktopId: "some-app")
        _ = try await app.waitForUpdates(1)
        #expect(
            try await observer.get(GeoClueTestClient.managerPath, oursManager, "ActiveApps") == .strings(["some-app"]))
        #expect(
            try await observer.get(GeoClueTestClient.managerPath, oursManager, "Providers")
                == .array(
                    element: "(subba{sv})",
                    [.structure([.string("static"), .uint32(1), .boolean(true), .boolean(true), .vardict([:])])]))
        _ = try await app.call(client, GeoClueTestClient.clientInterface, "Stop")
        try await observer.waitFor("ActiveApps to empty") {
            observer.signals.contains {
                $0.member == "PropertiesChanged" && $0.arguments().first?.string == oursManager
                    && $0.arguments()[1].stringKeyedEntries?["ActiveApps"] == .strings([])
            }
        }
        // Nothing of a client's is announced to others: the observer saw no client path at all.
        #expect(!observer.signals.contains { $0.path?.rawValue.hasPrefix("/org/freedesktop/GeoClue2/Client") == true })
    }

    @Test func replayedFixesCarryCourseSpeedAndTheSimulatedFlag() async throws {
        let harness = try DaemonHarness(
            config: "[replay]\nenable=true\npath=@DIR@/track.nmea\nspeed=1\n",
            files: ["track.nmea": nmeaTrack(count: 30)])
        defer { harness.stop() }
        try harness.startDaemon()
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let client = try await app.startedClient()
        _ = try await app.waitForUpdates(2)
        // The client's current Location, read again should the replay have moved on so far between the two calls
        // on a loaded machine that the object read first was released.
        var values: [String: DBusValue] = [:]
        for _ in 0..<5 where values.isEmpty {
            let current = try #require(
                try await app.get(client, GeoClueTestClient.clientInterface, "Location").objectPath)
            do {
                values = try await app.getAll(current, oursLocation)
            } catch {
                guard error.name == DBusError.Name.unknownMethod else { throw error }
            }
        }
        #expect(values["Provider"] == .string("replay"))
        #expect(values["Simulated"] == .boolean(true))
        #expect(abs((values["Course"]?.double ?? 0) - 90) < 1)
        #expect(abs((values["Speed"]?.double ?? 0) - 10) < 0.5)
        #expect(abs((values["EllipsoidalAltitude"]?.double ?? 0) - (545.4 + 46.9)) < 0.01)
        #expect((values["HorizontalAccuracy"]?.double ?? 0) > 0)
        #expect(values["MagneticHeading"]?.double?.isNaN == true)
    }

    @Test func minimumUpdateDistanceDropsNearbyFixes() async throws {
        let harness = try DaemonHarness(
            config: "[replay]\nenable=true\npath=@DIR@/track.nmea\nspeed=10\n",
            files: ["track.nmea": nmeaTrack(count: 60)])
        defer { harness.stop() }
        try harness.startDaemon()
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let client = try await named(app)
        // The track moves 10 m a fix; 35 m apart means every fourth fix at most.
        try await app.set(client, ours, "MinimumUpdateDistance", .double(35))
        let began = ContinuousClock.now
        _ = try await app.call(client, GeoClueTestClient.clientInterface, "Start")
        try await Task.sleep(for: .milliseconds(2500))
        let updates = app.locationUpdates.count
        // Ten fixes a second are played; at most every fourth may be delivered (plus the first).
        let played = Int(((ContinuousClock.now - began) / .seconds(1)) * 10) + 1
        #expect(updates >= 2 && updates <= played / 4 + 2, "\(updates) updates of \(played) fixes")
        await expectDBusError(DBusError.Name.invalidArgs) {
            try await app.set(client, ours, "MinimumUpdateDistance", .double(-1))
        }
    }

    // MonitoringTimeout's signals, to the millisecond: ServiceInProcessTests/ClientTimingTests.swift.

    @Test func powerSavingClientsDoNotStartSatelliteReceivers() async throws {
        // A gpsd provider pointing at a port nobody listens on: once started, its connection fails.
        let harness = try DaemonHarness(config: "[gpsd]\nenable=true\nhost=127.0.0.1\nport=9\n")
        defer { harness.stop() }
        try harness.startDaemon()
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let client = try await named(app)
        try await app.set(client, ours, "HighAccuracy", .boolean(false))
        _ = try await app.call(client, GeoClueTestClient.clientInterface, "Start")
        // The providers follow a client's Start, and its HighAccuracy, before the service reads the next call.
        #expect(try await app.providerRow("gpsd").running == false, "a power-saving client started gpsd")
        try await app.set(client, ours, "HighAccuracy", .boolean(true))
        #expect(try await app.providerRow("gpsd").running, "a high-accuracy client did not start gpsd")
        try await app.waitFor("Available to drop") {
            app.signals.contains { $0.member == "AvailabilityChanged" && $0.arguments().first == .boolean(false) }
        }
        #expect(try await app.get(client, ours, "Available") == .boolean(false))
    }
}
