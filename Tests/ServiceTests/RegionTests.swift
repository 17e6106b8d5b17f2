import DBus
import Foundation
import Loop
import TestBasics
import TestSupport
import Testing

/// Geofencing end to end: the daemon as a child process on a private bus, moved by a replayed track and by
/// `whereabouts set-location`, its regions read back through the bus, the library's CLI and the file it keeps.
@Suite("Regions watched by the service, end to end", .serialized)
struct RegionTests {
    static let ours = "io.github.whereabouts1.Client"
    static let app = "org.example.Maps"
    /// The static source's place (48.8584, 2.2945).
    static let home: [DBusValue] = [.double(48.8584), .double(2.2945)]

    /// Runs the CLI with `arguments` on a thread of its own.
    static func cli(_ harness: DaemonHarness, _ arguments: [String]) async throws -> CommandResult {
        try await onOwnThread {
            try Unprivileged.run(
                [try ProjectPaths.product("whereabouts").path] + arguments, asUser: nil,
                environment: harness.bus.environment, in: harness.directory)
        }
    }

    /// Waits up to 20 s for `whereabouts region list --json` of ``app`` to contain `text`.
    static func waitForListing(_ harness: DaemonHarness, containing text: String) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        var listing = ""
        while ContinuousClock.now < deadline {
            listing = try await cli(harness, ["region", "list", "--json", "--desktop-id", app]).output
            if listing.contains(text) { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestEnvironmentError("no \(text) in the listing: \(listing)\n\(harness.daemonLog)")
    }

    /// The daemon with the static source, and `files` beside it, started on a thread of its own.
    static func harness(files: [String: String] = [:]) async throws -> DaemonHarness {
        try await onOwnThread {
            let harness = try DaemonHarness(
                config: staticConfig, files: ["geolocation": staticFile].merging(files) { $1 })
            try harness.startDaemon()
            return harness
        }
    }

    /// A client of ``app`` on its own connection.
    @BusActor
    static func appClient(_ harness: DaemonHarness) async throws -> (GeoClueTestClient, ObjectPath) {
        let app = try await GeoClueTestClient(bus: harness.bus)
        let client = try await app.getClient()
        try await app.set(client, GeoClueTestClient.clientInterface, "DesktopId", .string(Self.app))
        return (app, client)
    }

    /// Waits (at most 10 s) until the states reported for `id` satisfy `condition`, and returns them.
    @BusActor
    static func waitForStates(
        _ app: GeoClueTestClient, _ id: String, _ what: String, _ condition: @escaping @BusActor ([String]) -> Bool
    ) async throws -> [String] {
        try await app.waitFor(what) { condition(states(app, id)) }
        return states(app, id)
    }

    /// The arguments of every `RegionChanged` on `app`'s connection, in order.
    @BusActor
    static func changes(_ app: GeoClueTestClient) -> [[DBusValue]] {
        app.signals.filter { $0.member == "RegionChanged" }.map { $0.arguments() }
    }

    /// The arguments of every `RegionsRemoved` on `app`'s connection, in order.
    @BusActor
    static func removals(_ app: GeoClueTestClient) -> [[DBusValue]] {
        app.signals.filter { $0.member == "RegionsRemoved" }.map { $0.arguments() }
    }

    /// The states `RegionChanged` reported for `id` on `app`'s connection, in order.
    @BusActor
    static func states(_ app: GeoClueTestClient, _ id: String) -> [String] {
        app.signals.filter { $0.member == "RegionChanged" }.map { $0.arguments() }
            .filter { $0.first?.string == id }.compactMap { $0[1].string }
    }

    @Test func aReplayedTrackEntersAndLeavesARegion() async throws {
        let harness = try await Self.harness(files: ["track.nmea": nmeaTrack(count: 60)])
        defer { harness.stop() }
        let (app, client) = try await Self.appClient(harness)
        defer { Task { @BusActor in app.close() } }
        // 300 m east of the track's start, which goes east 10 m a second for a minute.
        let east: Double = 11.0 + 300 / (111_320 * cos(48 * Double.pi / 180))
        let reply = try await app.call(
            client, Self.ours, "AddRegion",
            [.string("crossing"), .double(48), .double(east), .double(100), .vardict([:])])
        #expect(reply == [.double(100)])
        let played = try await Self.cli(harness, ["replay", harness.file("track.nmea").path, "--speed", "10"])
        #expect(played.status == 0, "\(played.output)\n\(harness.daemonLog)")
        let states = try await Self.waitForStates(app, "crossing", "the track to enter and leave") {
            $0.suffix(2) == ["inside", "outside"]
        }
        // Decided first from the static source (far away) or the track's start: outside, then in, then out.
        #expect(states == ["outside", "inside", "outside"], "\(harness.daemonLog)")
    }

    /// A track at 1 fix a second through `points` (metres east of 48°N 11°E, and the HDOP of the fix).
    static func track(_ points: [(east: Double, hdop: Double)]) -> String {
        var lines: [String] = []
        for (index, point) in points.enumerated() {
            let time = String(format: "1200%02d.00", index)
            let minutes = point.east / (111_320 * cos(48 * Double.pi / 180)) * 60
            let longitude = String(format: "011%07.4f", minutes)
            let hdop = String(format: "%.1f", point.hdop)
            lines.append(sentence("GPGGA,\(time),4800.0000,N,\(longitude),E,1,08,\(hdop),545.4,M,46.9,M,,"))
            lines.append(sentence("GPRMC,\(time),A,4800.0000,N,\(longitude),E,0.0,0.0,150324,,,A"))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    @Test func aTrackDwellsWalksTheBoundaryWithoutFlappingAndACoarseFixDecidesNothing() async throws {
        // Three fixes at the centre, eight a metre either side of the boundary (8.8 m accurate: the probability of
        // being inside stays between 0.3 and 0.7), two far away but 970 m coarse, more than twice the radius.
        let points =
            Array(repeating: (east: 0.0, hdop: 0.9), count: 3)
            + (0..<8).map { (east: $0 % 2 == 0 ? 99.0 : 101.0, hdop: 0.9) }
            + Array(repeating: (east: 5000.0, hdop: 99.0), count: 2)
        let harness = try await Self.harness(files: ["walk.nmea": Self.track(points)])
        defer { harness.stop() }
        let (app, client) = try await Self.appClient(harness)
        defer { Task { @BusActor in app.close() } }
        _ = try await app.call(
            client, Self.ours, "AddRegion",
            [.string("square"), .double(48), .double(11), .double(100), .vardict(["dwell": .uint32(3)])])
        _ = try await Self.waitForStates(app, "square", "the static source's fix, far away, to decide") {
            $0 == ["outside"]
        }
        let played = try await Self.cli(harness, ["replay", harness.file("walk.nmea").path])
        #expect(played.status == 0, "\(played.output)")
        _ = try await Self.waitForStates(app, "square", "the entry and the dwell") { $0.count >= 3 }
        // After the track the static source serves again, far away: that one exit may follow, decided by the
        // static source's fix in Paris, not by the track's coarse ones; nothing else.
        let states = await Self.states(app, "square")
        #expect(Array(states.prefix(3)) == ["outside", "inside", "dwelling"], "\(states)\n\(harness.daemonLog)")
        #expect(states.count == 3 || states.dropFirst(3) == ["outside"], "\(states)")
        let exits = await Self.changes(app).dropFirst(3)
        #expect(exits.allSatisfy { $0[3] == .double(48.8584) }, "\(exits)")
    }

    @Test func regionsOutliveTheirClientsAndTheDaemonAndWhatHappenedMeanwhileIsPending() async throws {
        let harness = try await Self.harness()
        defer { harness.stop() }
        let added = try await Self.cli(
            harness, ["region", "add", "home", "48.8584", "2.2945", "300", "--desktop-id", Self.app])
        #expect(added.status == 0 && added.output.contains("300"), "\(added.output)")
        // Watched with no client at all: the regions ask for the providers, which decide it.
        try await Self.waitForListing(harness, containing: #""state":"inside""#)
        let status = try await Self.cli(harness, ["status"])
        #expect(
            status.output.contains("regions: 1 watched, asking for level 6 (providers: static)"), "\(status.output)")
        let moved = try await Self.cli(harness, ["set-location", "52.52", "13.405"])
        #expect(moved.status == 0, "\(moved.output)")
        try await Self.waitForListing(harness, containing: #""state":"outside""#)
        try await onOwnThread {
            harness.daemon?.stop()
            try harness.startDaemon()
        }
        let (app, client) = try await Self.appClient(harness)
        defer { Task { @BusActor in app.close() } }
        let pending = try await app.call(client, Self.ours, "PendingRegionEvents")
        // The entry is pending too unless the CLI's client was still there to hear it.
        let states = pending.first?.elements?.compactMap { $0.fields?[1].string } ?? []
        #expect(states == ["inside", "outside"] || states == ["outside"], "\(pending)")
        let listed = try await app.call(client, Self.ours, "ListRegions")
        let row = try #require(listed.first?.elements?.first?.fields)
        #expect(row[0] == .string("home") && row[3] == .double(300))
        #expect(row[4].stringKeyedEntries?["state"]?.unwrapped == .string("outside"))
        // Another app of the same user sees none of them.
        try await app.set(client, GeoClueTestClient.clientInterface, "DesktopId", .string("org.example.Other"))
        #expect(try await app.call(client, Self.ours, "ListRegions") == [.array(element: "(sddda{sv})", [])])
    }

    @Test func theCLIWatchesARegionAsItChanges() async throws {
        let harness = try await Self.harness()
        defer { harness.stop() }
        let added = try await Self.cli(
            harness, ["region", "add", "home", "48.8584", "2.2945", "300", "--desktop-id", Self.app])
        #expect(added.status == 0, "\(added.output)")
        let watcher = try Unprivileged.spawn(
            [try ProjectPaths.product("whereabouts").path, "region", "watch", "--json", "--desktop-id", Self.app],
            asUser: nil, environment: harness.bus.environment, in: harness.directory)
        defer { watcher.stop(grace: 1) }
        // The machine goes away and back, each move seen through by the service before the next, until the
        // watcher, whenever it began to listen, has printed both.
        let deadline = ContinuousClock.now + .seconds(60)
        var away = false
        while !(watcher.log.contains(#""state":"outside""#) && watcher.log.contains(#""state":"inside""#)) {
            guard ContinuousClock.now < deadline, watcher.isRunning else {
                throw TestEnvironmentError("region watch printed: \(watcher.log)\n\(harness.daemonLog)")
            }
            away.toggle()
            let place = away ? ["52.52", "13.405"] : ["48.8584", "2.2945"]
            #expect(try await Self.cli(harness, ["set-location"] + place).status == 0)
            try await Self.waitForListing(harness, containing: away ? #""state":"outside""# : #""state":"inside""#)
            try await Task.sleep(for: .milliseconds(200))
        }
        let outside = watcher.log.split(separator: "\n").first { $0.contains(#""state":"outside""#) }
        #expect(outside?.contains(#""id":"home""#) == true && outside?.contains(#""latitude":52.52"#) == true)
    }

    @Test func revokingTheGrantRemovesTheAppsRegions() async throws {
        let grants = "# whereabouts grants 1\n0\t\(Self.app)\talways\tprecise\n"
        let harness = try await Self.harness(files: ["grants": grants])
        defer { harness.stop() }
        let (app, client) = try await Self.appClient(harness)
        defer { Task { @BusActor in app.close() } }
        _ = try await app.call(
            client, Self.ours, "AddRegion", [.string("home")] + Self.home + [.double(50), .vardict([:])])
        _ = try await app.call(
            GeoClueTestClient.managerPath, "io.github.whereabouts1.Manager", "RevokeGrant",
            [.uint32(0), .string(Self.app)])
        let expected: [DBusValue] = [.strings(["home"]), .string("authorisation-revoked")]
        let deadline = ContinuousClock.now + .seconds(10)
        while await !Self.removals(app).contains(expected) {
            guard ContinuousClock.now < deadline else { throw TestEnvironmentError("no RegionsRemoved") }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await app.call(client, Self.ours, "ListRegions") == [.array(element: "(sddda{sv})", [])])
    }

    @Test func badArgumentsAreRefusedWithTheirNamesAndTheLimitHolds() async throws {
        let harness = try await Self.harness()
        defer { harness.stop() }
        let (app, client) = try await Self.appClient(harness)
        defer { Task { @BusActor in app.close() } }
        func add(
            _ id: String, _ latitude: Double, _ longitude: Double, _ radius: Double, _ options: [String: DBusValue]
        )
            async throws
        {
            _ = try await app.call(
                client, Self.ours, "AddRegion",
                [.string(id), .double(latitude), .double(longitude), .double(radius), .vardict(options)])
        }
        let invalid = "org.freedesktop.DBus.Error.InvalidArgs"
        await expectDBusError(invalid, containing: "latitude") { try await add("a", 91, 0, 100, [:]) }
        await expectDBusError(invalid, containing: "longitude") { try await add("a", 0, -181, 100, [:]) }
        await expectDBusError(invalid, containing: "radius") { try await add("a", 0, 0, 0, [:]) }
        await expectDBusError(invalid, containing: "radius") { try await add("a", 0, 0, 100_001, [:]) }
        await expectDBusError(invalid, containing: "id") { try await add("", 0, 0, 100, [:]) }
        await expectDBusError(invalid, containing: "id") {
            try await add(String(repeating: "x", count: 256), 0, 0, 100, [:])
        }
        await expectDBusError(invalid, containing: "colour") {
            try await add("a", 0, 0, 100, ["colour": .string("red")])
        }
        await expectDBusError(invalid, containing: "dwell") { try await add("a", 0, 0, 100, ["dwell": .string("1")]) }
        await expectDBusError(invalid, containing: "expires") { try await add("a", 0, 0, 100, ["expires": .uint64(1)]) }
        await expectDBusError(invalid, containing: "id") {
            _ = try await app.call(client, Self.ours, "RemoveRegion", [.string("never-added")])
        }
        for number in 0..<1000 { try await add("r\(number)", 10, 10, 100, [:]) }
        await expectDBusError("io.github.whereabouts1.Error.LimitsExceeded") {
            try await add("r1000", 10, 10, 100, [:])
        }
        // Replacing one of the thousand is not one more.
        try await add("r0", 11, 11, 200, [:])
        // An app the configuration refuses may not watch.
        try await app.set(client, GeoClueTestClient.clientInterface, "DesktopId", .string("denied-app"))
        await expectDBusError("io.github.whereabouts1.Error.PermissionDenied") { try await add("a", 0, 0, 100, [:]) }
        #expect(harness.daemon?.isRunning == true)
    }

    @Test func aCorruptRegionsFileIsMovedAside() async throws {
        let harness = try await Self.harness(files: ["regions": "# whereabouts regions 1\nthis is not a region\n"])
        defer { harness.stop() }
        let (app, client) = try await Self.appClient(harness)
        defer { Task { @BusActor in app.close() } }
        #expect(try await app.call(client, Self.ours, "ListRegions") == [.array(element: "(sddda{sv})", [])])
        #expect(harness.daemonLog.contains("regions"), "\(harness.daemonLog)")
        let entries = try FileManager.default.contentsOfDirectory(atPath: harness.directory.path)
        #expect(entries.contains { $0.hasPrefix("regions.") && $0 != "regions" }, "\(entries)")
    }
}
