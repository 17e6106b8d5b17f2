import DBus
import Foundation
import Loop
import TestSupport
import Testing
import Whereabouts

/// The seed API's position format: exactly these keys.
let positionKeys: Set<String> = [
    "latitude", "longitude", "altitude", "horizontalAccuracy", "verticalAccuracy", "course", "speed", "timestamp",
    "magneticHeading", "trueHeading", "headingAccuracy",
]

/// Runs the `whereabouts` CLI against `harness`'s bus and returns its exit code and output.
func runCLI(_ harness: DaemonHarness, _ arguments: [String]) throws -> (code: Int32, output: String) {
    let log = harness.file("cli-\(UUID().uuidString).log")
    let process = try ChildProcess(
        try ProjectPaths.product("whereabouts"), arguments, environment: harness.bus.environment, logFile: log)
    try process.wait(timeout: 30)
    return (process.exitCode ?? -1, process.log)
}

@Suite("The Whereabouts library and the whereabouts CLI, end to end")
@BusActor
struct LibraryAndCLITests {
    @Test func theLibraryLocatesStreamsAndReports() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let manager = try LocationManager(desktopId: "library-test", address: service.harness.bus.address)
        defer { manager.close() }
        #expect(try await manager.isWhereabouts())
        #expect(try await manager.servicesEnabled())
        let position = try await manager.requestLocation(RequestOptions(timeout: .seconds(5)))
        #expect(position.latitude == 48.8584 && position.longitude == 2.2945)
        #expect(position.horizontalAccuracy == 10 && position.altitude == 35)
        #expect(position.speed == nil && position.course == nil && position.provider == "static")
        let last = try #require(try await manager.lastLocation())
        #expect(last.isStale && last.latitude == 48.8584)
        // A city stream runs the providers city needs; nothing the user chose limits the app, so the static
        // position comes as it is.
        var stream = manager.locations(MonitoringConfiguration(accuracy: .city)).makeAsyncIterator()
        let city = try #require(try await stream.next())
        #expect(city.horizontalAccuracy == 10 && city.latitude == 48.8584)
        var availability = manager.availability().makeAsyncIterator()
        #expect(try await availability.next() == true)
        let status = try await manager.status()
        #expect(status.isWhereabouts && status.providers.map(\.kind) == ["static"])
    }

    @Test func theLibraryReportsTypedErrors() async throws {
        let harness = try DaemonHarness(config: "[denied-app]\nallowed=false\nsystem=false\nusers=\n")
        defer { harness.stop() }
        try harness.startDaemon()
        let manager = try LocationManager(desktopId: "some-app", address: harness.bus.address)
        defer { manager.close() }
        await #expect(throws: LocationError.timeout) {
            _ = try await manager.requestLocation(RequestOptions(timeout: .milliseconds(300)))
        }
        #expect(try await manager.lastLocation() == nil)
        let denied = try LocationManager(desktopId: "denied-app", address: harness.bus.address)
        defer { denied.close() }
        do {
            _ = try await denied.requestLocation()
            Issue.record("expected permissionDenied")
        } catch {
            guard case .permissionDenied = error else {
                Issue.record("got \(error)")
                return
            }
        }
        harness.daemon?.stop()
        let orphan = try LocationManager(desktopId: "some-app", address: harness.bus.address)
        defer { orphan.close() }
        do {
            _ = try await orphan.requestLocation()
            Issue.record("expected serviceUnavailable")
        } catch {
            guard case .serviceUnavailable = error else {
                Issue.record("got \(error)")
                return
            }
        }
    }

    @Test func theCLIPrintsThePositionFormat() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let harness = service.harness
        let located = try runCLI(harness, ["locate", "--json"])
        #expect(located.code == 0, "\(located.output)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(located.output.utf8)) as? [String: Any], "\(located.output)")
        #expect(Set(object.keys) == positionKeys)
        #expect(object["latitude"] as? Double == 48.8584)
        #expect(object["horizontalAccuracy"] as? Double == 10)
        #expect(object["altitude"] as? Double == 35)
        #expect(object["speed"] is NSNull && object["course"] is NSNull && object["magneticHeading"] is NSNull)
        #expect((object["timestamp"] as? Int64 ?? 0) > 1_700_000_000_000)

        let watched = try runCLI(harness, ["watch", "--json", "--count", "1", "--accuracy", "city"])
        #expect(watched.code == 0, "\(watched.output)")
        let lines = watched.output.split(separator: "\n")
        #expect(lines.count == 1)
        let city = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(Set(city.keys) == positionKeys)
        #expect(city["horizontalAccuracy"] as? Double == 10)

        let status = try runCLI(harness, ["status"])
        #expect(status.code == 0 && status.output.contains("provider static: available"), "\(status.output)")
        let last = try runCLI(harness, ["last"])
        #expect(last.code == 0 && last.output.contains("(last known)"), "\(last.output)")
    }

    @Test func theCLIExitCodesAreDocumented() async throws {
        let harness = try DaemonHarness(config: "[denied-app]\nallowed=false\nsystem=false\nusers=\n")
        defer { harness.stop() }
        try harness.startDaemon()
        #expect(try runCLI(harness, ["locate", "--timeout", "0.3"]).code == 3)
        #expect(try runCLI(harness, ["locate", "--desktop-id", "denied-app"]).code == 4)
        #expect(try runCLI(harness, ["last"]).code == 5)
        #expect(try runCLI(harness, ["locate", "--accuracy", "7"]).code == 2)
        #expect(try runCLI(harness, ["frobnicate"]).code == 2)
        harness.daemon?.stop()
        #expect(try runCLI(harness, ["locate"]).code == 1)
    }
}
