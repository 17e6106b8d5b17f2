import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

@Suite("Bad configuration, files and calls, end to end")
@BusActor
struct BadInputTests {
    let client = GeoClueTestClient.clientInterface
    let location = GeoClueTestClient.locationInterface
    let manager = GeoClueTestClient.managerInterface
    let managerPath = GeoClueTestClient.managerPath

    // MARK: Refused at start

    /// Runs whereaboutsd with `arguments` (`@CONFIG@` stands for the harness's config file) and returns its exit
    /// code and log once it exits.
    func runToExit(config: String, arguments: [String]? = nil) async throws -> (
        code: Int32?, log: String, config: String
    ) {
        let harness = try await makeHarness(config: config)
        defer { harness.stop() }
        let path = harness.configFile.path
        try await harness.launch(
            arguments: arguments.map { $0.map { $0.replacingOccurrences(of: "@CONFIG@", with: path) } },
            waitForName: false)
        let daemon = try #require(harness.daemon)
        _ = try await daemon.exited(within: 20)
        return (daemon.exitCode, daemon.log, path)
    }

    @Test func aMalformedValueIsRefusedWithItsPlace() async throws {
        let result = try await runToExit(config: "[static-source]\nenable=maybe\n")
        #expect(result.code == 1, "\(result.log)")
        #expect(result.log.contains("\(result.config):2:"), "\(result.log)")
        #expect(result.log.contains("'enable'"), "\(result.log)")
        #expect(result.log.contains("maybe"), "\(result.log)")
    }

    @Test func anUnknownKeyIsRefusedWithItsPlace() async throws {
        let result = try await runToExit(config: "[static-source]\nenable=true\ncolour=blue\n")
        #expect(result.code == 1, "\(result.log)")
        #expect(result.log.contains("\(result.config):3:"), "\(result.log)")
        #expect(result.log.contains("'colour'"), "\(result.log)")
        #expect(result.log.contains("unknown key"), "\(result.log)")
    }

    @Test func aMissingConfigFileIsRefused() async throws {
        let result = try await runToExit(config: "", arguments: ["--config", "@CONFIG@.missing", "--timeout", "0"])
        #expect(result.code == 1, "\(result.log)")
        #expect(result.log.contains("\(result.config).missing: No such file or directory"), "\(result.log)")
    }

    @Test(arguments: [
        (["--bogus-option"], "unknown option '--bogus-option'"),
        (["--timeout", "soon"], "--timeout needs a whole number of seconds"),
        (["--config"], "--config needs a value"),
    ])
    func aBadCommandLineExitsWithStatus2(arguments: [String], message: String) async throws {
        let result = try await runToExit(config: staticConfig, arguments: arguments)
        #expect(result.code == 2, "\(result.log)")
        #expect(result.log.contains(message), "\(result.log)")
        #expect(result.log.contains("Usage: whereaboutsd"), "\(result.log)")
    }

    // MARK: Bad location files: logged, the service goes on without a location

    /// Checks that the daemon serves on without any location: no available level, no fix for a started client
    /// within a second, and new clients still answered.
    func expectServingWithoutLocation(_ harness: DaemonHarness) async throws {
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        #expect(try await app.get(managerPath, manager, "AvailableAccuracyLevel") == .uint32(0))
        let path = try await app.startedClient()
        #expect(try await app.get(path, client, "Active") == .boolean(true))
        try await Task.sleep(for: .seconds(1))
        // A reply orders every signal the daemon sent before it.
        #expect(try await app.get(path, client, "Location") == .objectPath(.root))
        #expect(app.locationUpdates.isEmpty)
        let other = try await GeoClueTestClient(bus: harness.bus)
        defer { other.close() }
        let otherPath = try await other.getClient()
        #expect(otherPath != path)
        #expect(harness.daemon?.isRunning == true, "\(harness.daemonLog)")
    }

    @Test(arguments: [
        BadFile("three values", "48.8584\n2.2945\n35\n", "too few values"),
        BadFile("not a number", "abc\n", "'abc' is not a number"),
        BadFile("five values", "48.8584\n2.2945\n35\n10\n99\n", "too many values"),
        BadFile("latitude out of range", "95\n2.2945\n35\n10\n", "out of range"),
        BadFile("empty", "", "too few values"),
    ])
    func aMalformedStaticFileLeavesNoLocation(file bad: BadFile) async throws {
        let harness = try await makeHarness(config: staticConfig)
        defer { harness.stop() }
        try write(bad.bytes, to: harness.file("geolocation"))
        try await harness.launch()
        let file = harness.file("geolocation").path
        let line = harness.daemonLog.split(separator: "\n").first { $0.contains("static source") && $0.contains(file) }
        #expect(line?.contains(bad.problem) == true, "\(harness.daemonLog)")
        try await expectServingWithoutLocation(harness)
    }

    @Test func aMissingStaticFileLeavesNoLocation() async throws {
        let harness = try await startedHarness(config: staticConfig)
        defer { harness.stop() }
        let file = harness.file("geolocation").path
        #expect(harness.daemonLog.contains("\(file): No such file or directory"), "\(harness.daemonLog)")
        try await expectServingWithoutLocation(harness)
    }

    /// A FIFO where the static location or the track should be would block the bus thread at the read; it is
    /// refused by its kind and the service goes on without that source.
    @Test(arguments: ["static", "replay"])
    func aStaticOrTrackFileThatIsAFIFOIsRefusedWithoutBlocking(source: String) async throws {
        let harness = try await makeHarness(config: source == "static" ? staticConfig : replayConfig(speed: 10))
        defer { harness.stop() }
        let file = harness.file(source == "static" ? "geolocation" : "track.nmea").path
        #expect(mkfifo(file, 0o600) == 0)
        try await harness.launch()
        let line = harness.daemonLog.split(separator: "\n").first {
            $0.contains("\(source) source") && $0.contains(file)
        }
        #expect(line?.contains("is a FIFO, not a regular file") == true, "\(harness.daemonLog)")
        try await expectServingWithoutLocation(harness)
    }

    @Test(arguments: [
        BadFile(
            "binary", [0x00, 0xFF, 0xFE, 0x24, 0x80, 0x0A, 0xC3, 0x28, 0x24, 0x47, 0x50, 0x0D, 0x0A, 0x00],
            "not valid UTF-8"),
        BadFile("NMEA with bad checksums", nmeaTrack(count: 5).replacing(/\*[0-9A-F]{2}/, with: "*00"), "no valid fix"),
        BadFile(
            "empty GPX",
            #"<?xml version="1.0"?><gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1"></gpx>"#,
            "no points"),
        BadFile("truncated GPX", #"<gpx version="1.1"><trk><trkseg><trkpt lat="48" lon="#, "malformed XML"),
        BadFile("empty", "", "neither GPX nor NMEA"),
        BadFile("prose", "just some words\nand more\n", "neither GPX nor NMEA"),
    ])
    func aGarbageReplayFileLeavesNoLocation(file bad: BadFile) async throws {
        let harness = try await makeHarness(config: replayConfig(speed: 10))
        defer { harness.stop() }
        try write(bad.bytes, to: harness.file("track.nmea"))
        try await harness.launch()
        let file = harness.file("track.nmea").path
        let log = harness.daemonLog
        let line = log.split(separator: "\n").first { $0.contains("replay source") }
        #expect(line?.contains(file) == true, "\(log)")
        #expect(line?.contains(bad.problem) == true, "\(log)")
        try await expectServingWithoutLocation(harness)
    }

    // MARK: Rewriting the static file while a client is active

    /// A running daemon with the static source, that watches its file.
    ///
    /// Every whereaboutsd and every dbus-daemon takes one of the user's inotify instances (128 by default); at
    /// the peak of a parallel test run they can run out, and the daemon then logs that it cannot watch. That is a
    /// shortage of the test machine, not a finding, so the daemon is started again once other tests are done.
    func watchingStaticService() async throws -> DaemonHarness {
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            let harness = try await startedHarness(config: staticConfig, files: ["geolocation": staticFile])
            guard harness.daemonLog.contains("cannot watch") else { return harness }
            let log = harness.daemonLog
            harness.stop()
            guard ContinuousClock.now < deadline else {
                throw TestEnvironmentError(
                    "whereaboutsd could not watch its static file for 120 s (are the inotify instances, /proc/sys/fs/inotify/max_user_instances, used up?):\n\(log)"
                )
            }
            print("whereaboutsd could not watch its static file (inotify instances used up?); starting it again")
            try await Task.sleep(for: .seconds(1))
        }
    }

    /// Waits for the first `LocationUpdated` after the first `seen` whose Location object is at `latitude`, and
    /// returns its values.
    ///
    /// Other updates may come first: a file that a concurrently spawned process inherited from the test process
    /// is closed when that process exits, and the daemon reloads (and re-announces) the file on every close.
    func waitForLocation(
        _ app: GeoClueTestClient, at latitude: Double, after seen: Int, _ harness: DaemonHarness
    ) async throws -> [String: DBusValue] {
        var checked = seen
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            let updates = app.locationUpdates
            while checked < updates.count {
                let path = updates[checked].new
                checked += 1
                let values: [String: DBusValue]
                do {
                    values = try await app.getAll(path, location)
                } catch {
                    guard error.name == DBusError.Name.unknownMethod else { throw error }
                    continue
                }
                if values["Latitude"] == .double(latitude) { return values }
            }
            guard ContinuousClock.now < deadline else {
                throw TestEnvironmentError(
                    "no LocationUpdated to latitude \(latitude) within 20 s; whereaboutsd log:\n\(harness.daemonLog)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Expects `values` to be the static location `latitude`, `longitude`, stamped within 2 s after `written`.
    func expectLocation(
        _ values: [String: DBusValue], _ latitude: Double, _ longitude: Double, writtenAt written: Date,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(values["Latitude"] == .double(latitude), sourceLocation: sourceLocation)
        #expect(values["Longitude"] == .double(longitude), sourceLocation: sourceLocation)
        // The daemon stamps a static fix when it emits it: this measures its reaction, not the test's.
        let stamped = timestampSeconds(values["Timestamp"]) ?? 0
        let delay = stamped - written.timeIntervalSince1970
        #expect(delay > -0.01 && delay < 2, "reloaded \(delay) s after the write", sourceLocation: sourceLocation)
    }

    /// Writes `text` into the existing file at `url`, keeping its inode.
    func rewriteInPlace(_ url: URL, _ text: String) throws {
        try write(text, to: url, flags: O_WRONLY | O_TRUNC)
    }

    /// Writes `text` to a temporary file beside `url` and renames it over `url`, as editors do.
    func replace(_ url: URL, _ text: String) throws {
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).new")
        try write(text, to: temporary)
        guard rename(temporary.path, url.path) == 0 else { throw TestEnvironmentError("rename failed: errno \(errno)") }
    }

    func inode(_ url: URL) -> UInt64 {
        var info = stat()
        return stat(url.path, &info) == 0 ? UInt64(info.st_ino) : 0
    }

    @Test func rewritingTheStaticFileMovesActiveClients() async throws {
        let harness = try await watchingStaticService()
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        _ = try await app.startedClient()
        _ = try await waitForLocation(app, at: 48.8584, after: 0, harness)
        let file = harness.file("geolocation")

        var written = Date()
        var seen = app.locationUpdates.count
        try replace(file, "40.4168\n-3.7038\n667\n25\n")
        expectLocation(
            try await waitForLocation(app, at: 40.4168, after: seen, harness), 40.4168, -3.7038, writtenAt: written)

        let before = inode(file)
        written = Date()
        seen = app.locationUpdates.count
        try rewriteInPlace(file, "51.5007\n-0.1246\n15\n5\n")
        #expect(inode(file) == before, "the rewrite should keep the file")
        let inPlace = try await waitForLocation(app, at: 51.5007, after: seen, harness)
        expectLocation(inPlace, 51.5007, -0.1246, writtenAt: written)
        #expect(inPlace["Altitude"] == .double(15))
        #expect(inPlace["Accuracy"] == .double(5))

        // Broken: the location is withdrawn, the clients keep the last one.
        try rewriteInPlace(file, "51.5007\nnot a longitude\n")
        try await waitForLevel(app, 0)
        #expect(harness.daemonLog.contains("\(file.path):2:"), "\(harness.daemonLog)")
        #expect(harness.daemon?.isRunning == true)
        // Repaired: the location comes back.
        written = Date()
        seen = app.locationUpdates.count
        try replace(file, "-33.8568\n151.2153\n5\n8\n")
        expectLocation(
            try await waitForLocation(app, at: -33.8568, after: seen, harness), -33.8568, 151.2153, writtenAt: written)
        try await waitForLevel(app, 8)
    }

    /// Polls `AvailableAccuracyLevel` until it is `level`.
    func waitForLevel(_ app: GeoClueTestClient, _ level: UInt32) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while try await app.get(managerPath, manager, "AvailableAccuracyLevel") != .uint32(level) {
            guard ContinuousClock.now < deadline else {
                throw TestEnvironmentError("AvailableAccuracyLevel never became \(level)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    // MARK: Bad calls

    @Test func wrongSignaturesAreInvalidArgs() async throws {
        let harness = try await startedHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let path = try await app.getClient()
        let properties = "org.freedesktop.DBus.Properties"
        let calls: [(path: ObjectPath, interface: String, member: String, arguments: [DBusValue])] = [
            (managerPath, manager, "DeleteClient", [.string(path.rawValue)]),
            (managerPath, manager, "DeleteClient", []),
            (managerPath, manager, "DeleteClient", [.objectPath(path), .objectPath(path)]),
            (managerPath, manager, "GetClient", [.string("x")]),
            (managerPath, manager, "CreateClient", [.uint32(1)]),
            (managerPath, manager, "AddAgent", []),
            (managerPath, manager, "AddAgent", [.uint32(1)]),
            (path, client, "Start", [.boolean(true)]),
            (managerPath, properties, "Get", [.uint32(1), .uint32(2)]),
            (managerPath, properties, "Get", [.string(manager)]),
            (managerPath, properties, "Get", [.string(manager), .string("InUse"), .string("extra")]),
            (managerPath, properties, "GetAll", []),
            (managerPath, properties, "GetAll", [.objectPath(managerPath)]),
            (path, properties, "Set", [.string(client), .string("DesktopId"), .string("not a variant")]),
            (path, properties, "Set", [.string(client), .string("DesktopId")]),
        ]
        for call in calls {
            await expectDBusError(DBusError.Name.invalidArgs) {
                _ = try await app.call(call.path, call.interface, call.member, call.arguments)
            }
        }
        // Nothing was deleted or changed, and the daemon serves on.
        #expect(try await app.getClient() == path)
        #expect(try await app.get(path, client, "DesktopId") == .string(""))
        _ = try await app.startedClient()
        _ = try await app.waitForUpdates(1)
    }

    @Test func clientsOfAClosedConnectionAreAllDropped() async throws {
        let harness = try await startedHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        let creator = try await GeoClueTestClient(bus: harness.bus)
        var paths: [ObjectPath] = []
        for _ in 0..<200 { paths.append(try await creator.createClient()) }
        #expect(Set(paths).count == 200)
        #expect(paths.last?.rawValue == "/org/freedesktop/GeoClue2/Client/200")
        creator.close()

        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        // Another connection is refused while a client exists, and told it does not exist once it is gone.
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            let failure: DBusError
            do {
                _ = try await app.get(paths[199], client, "Active")
                Issue.record("another connection could read \(paths[199])")
                break
            } catch {
                failure = error
            }
            guard failure.name == DBusError.Name.accessDenied else { break }
            guard ContinuousClock.now < deadline else { throw TestEnvironmentError("the clients were never dropped") }
            try await Task.sleep(for: .milliseconds(20))
        }
        for path in paths {
            await expectDBusError(DBusError.Name.unknownMethod, containing: "Object does not exist") {
                _ = try await app.get(path, client, "Active")
            }
        }
        let fresh = try await app.getClient()
        let number = try #require(UInt32(fresh.lastElement))
        #expect(number > 200)
        let tree = try await app.call(
            ObjectPath("/org/freedesktop/GeoClue2/Client")!, "org.freedesktop.DBus.Introspectable", "Introspect")
        #expect(try InterfaceXML.parse(tree[0].string ?? "").children == [String(number)])
    }
}

/// A malformed file for the daemon to read, and what its log line should say about it.
struct BadFile: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    let problem: String

    init(_ name: String, _ bytes: [UInt8], _ problem: String) {
        self.name = name
        self.bytes = bytes
        self.problem = problem
    }

    init(_ name: String, _ text: String, _ problem: String) {
        self.init(name, Array(text.utf8), problem)
    }

    var testDescription: String { name }
}
