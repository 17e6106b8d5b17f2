import DBus
import Foundation
import Loop
import TestBasics
import TestSupport
import Testing

/// `whereabouts set-location` and `clear-location` (`SetStaticLocation`, `ClearStaticLocation`): a location an
/// administrator sets, served in the place of the static source's file.
@Suite("Setting the static location")
struct StaticLocationSettingTests {
    static let manager = "io.github.whereabouts1.Manager"

    static func cli(_ harness: DaemonHarness, _ arguments: [String], asUser user: String? = nil) throws -> CommandResult
    {
        try Unprivileged.run(
            [try ProjectPaths.product("whereabouts").path] + arguments, asUser: user,
            environment: harness.bus.environment, in: harness.directory)
    }

    /// Waits until the latest fix `app` was given is at `latitude`.
    @BusActor
    static func waitForLatitude(_ app: GeoClueTestClient, _ latitude: Double) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while try await app.latestLocation()?["Latitude"] != .double(latitude) {
            guard ContinuousClock.now < deadline else { throw TestEnvironmentError("no fix at latitude \(latitude)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func aSetLocationTakesThePlaceOfTheFileUntilCleared() async throws {
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        try harness.startDaemon()
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        _ = try await app.startedClient()
        try await Self.waitForLatitude(app, 48.8584)

        let set = try Self.cli(harness, ["set-location", "-33.8568", "151.2153", "--altitude", "5", "--radius", "50"])
        #expect(set.status == 0, "\(set.output)\n\(harness.daemonLog)")
        try await Self.waitForLatitude(app, -33.8568)
        let latest = try #require(try await app.latestLocation())
        #expect(latest["Longitude"] == .double(151.2153))
        #expect(latest["Accuracy"] == .double(50))
        #expect(latest["Altitude"] == .double(5))

        let cleared = try Self.cli(harness, ["clear-location"])
        #expect(cleared.status == 0, "\(cleared.output)")
        try await Self.waitForLatitude(app, 48.8584)
        #expect(!FileManager.default.fileExists(atPath: harness.file("static-location").path))
    }

    @Test func aSetLocationServesWithoutAStaticSourceAndSurvivesARestart() async throws {
        let harness = try DaemonHarness(config: "[agent]\nwhitelist=gnome-shell\n")
        defer { harness.stop() }
        try harness.startDaemon()
        let set = try Self.cli(harness, ["set-location", "52.52", "13.405"])
        #expect(set.status == 0, "\(set.output)\n\(harness.daemonLog)")
        #expect(
            try String(contentsOf: harness.file("static-location"), encoding: .utf8).contains(
                "52.52\n13.405\n0.0\n100.0\n"))

        harness.daemon?.stop()
        try harness.startDaemon()
        let located = try Self.cli(harness, ["locate", "--json"])
        #expect(located.status == 0, "\(located.output)\n\(harness.daemonLog)")
        #expect(located.output.contains("\"latitude\":52.52"), "\(located.output)")
        #expect(located.output.contains("\"horizontalAccuracy\":100"), "\(located.output)")

        _ = try Self.cli(harness, ["clear-location"])
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        #expect(try await app.availableLevel() == 0, "no source is left once the location is cleared")
    }

    @Test func badValuesUnauthorisedCallersAndACorruptFileAreRefused() async throws {
        let harness = try DaemonHarness(
            config: staticConfig, files: ["geolocation": staticFile, "static-location": "91\n0\n0\n10\n"])
        defer { harness.stop() }
        try harness.startDaemon()
        #expect(harness.daemonLog.contains("static location: "), "\(harness.daemonLog)")
        let aside = try FileManager.default.contentsOfDirectory(atPath: harness.directory.path)
            .filter { $0.hasPrefix("static-location.corrupt-") }
        #expect(aside.count == 1, "the corrupt file is moved aside: \(aside)")

        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        for (values, named) in [
            ([91.0, 0, 0, 10], "latitude"), ([0, -181, 0, 10], "longitude"), ([0, 0, .nan, 10], "altitude"),
            ([0, 0, 0, -1], "accuracy"),
        ] {
            await expectDBusError("org.freedesktop.DBus.Error.InvalidArgs", containing: named) {
                _ = try await app.call(
                    GeoClueTestClient.managerPath, Self.manager, "SetStaticLocation",
                    values.map { DBusValue.double($0) })
            }
        }
        let refused = try Self.cli(harness, ["set-location", "1", "2"], asUser: "nobody")
        #expect(refused.status == 4, "\(refused.output)")
        let unknown = try Self.cli(harness, ["set-location", "north", "2"])
        #expect(unknown.status == 2, "\(unknown.output)")
        let located = try Self.cli(harness, ["locate", "--json"])
        #expect(located.output.contains("\"latitude\":48.8584"), "the configured file still serves: \(located.output)")
    }
}
