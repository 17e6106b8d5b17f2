import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing
import WhereaboutsCore

/// The compass end to end: the real iio-sensor-proxy with its fake compass, under its package's bus policy, and
/// the daemon run as its service user `whereabouts` on the same private bus, let in by the project's own policy
/// (`dbus/org.freedesktop.GeoClue2.conf`) alone. The fake compass turns only while claimed, which shows when the
/// daemon holds the claim.
@Suite("Compass, end to end (real iio-sensor-proxy)", .serialized)
@BusActor
struct CompassEndToEndTests {
    let client = GeoClueTestClient.clientInterface
    let extended = "io.github.whereabouts1.Location"

    /// The repository's WMM2025 coefficients.
    nonisolated static let modelFile = ProjectPaths.root.appendingPathComponent("data/WMM2025.COF")

    /// `source` and the compass with the model at `model` (by default none: the daemon's built-in WMM2025, as from a
    /// build with no model file installed), grants kept where the service user can write them.
    nonisolated static func config(source: String, model: String? = nil) -> String {
        source + """

            [compass]
            enable=true
            \(model.map { "magnetic-model=\($0)" } ?? "")

            [authorisation]
            polkit=false
            grants=@DIR@/state/grants
            """
    }

    /// The static source at the Eiffel Tower (``staticFile``).
    nonisolated static let staticSource = "[static-source]\nenable=true\npath=@DIR@/geolocation\n"

    /// A private bus with iio-sensor-proxy and the daemon, run as `whereabouts`; all stop with it.
    final class Rig: @unchecked Sendable {
        let bus: PrivateBus
        /// The real iio-sensor-proxy; nil when the stand-in plays it.
        private(set) var proxy: SensorProxyHarness!
        /// `Tests/StandIns/compass_standin.py`, when it plays iio-sensor-proxy.
        private(set) var standIn: ChildProcess?
        let harness: DaemonHarness

        /// The real iio-sensor-proxy, or with `standInReadings` the stand-in sending those readings once claimed.
        init(
            config: String = CompassEndToEndTests.config(source: CompassEndToEndTests.staticSource),
            standInReadings: [String]? = nil
        ) throws {
            bus = try PrivateBus(extraPolicy: SensorProxyHarness.busPolicy())
            do {
                if let standInReadings {
                    let script = ProjectPaths.standIns.appendingPathComponent("compass_standin.py")
                    let standIn = try ChildProcess(
                        WPASupplicantMock.python, [script.path, bus.address] + standInReadings,
                        environment: bus.environment, logFile: bus.directory.appendingPathComponent("standin.log"))
                    self.standIn = standIn
                    try Wait.until("the compass stand-in to own its name", timeout: 20) {
                        guard standIn.isRunning else { throw TestEnvironmentError("stand-in exited:\n\(standIn.log)") }
                        return standIn.log.contains("ready")
                    }
                } else {
                    proxy = try SensorProxyHarness(bus: bus)
                }
                harness = try DaemonHarness(config: config, bus: bus)
                try write(Array(staticFile.utf8), to: harness.file("geolocation"))
                let state = harness.file("state")
                try FileManager.default.createDirectory(at: state, withIntermediateDirectories: false)
                guard Self.chownToServiceUser(state) else {
                    throw TestEnvironmentError("cannot hand \(state.path) to whereabouts")
                }
                try harness.startDaemon(launcher: [
                    try Executables.find("setpriv").path, "--reuid=whereabouts", "--regid=whereabouts",
                    "--clear-groups",
                ])
            } catch {
                bus.stop()
                throw error
            }
        }

        /// Hands `folder` to the service user, whatever its uid.
        private static func chownToServiceUser(_ folder: URL) -> Bool {
            guard let user = getpwnam("whereabouts") else { return false }
            return chown(folder.path, user.pointee.pw_uid, user.pointee.pw_gid) == 0
        }

        /// Stops iio-sensor-proxy and starts a new one on the same bus.
        func restartProxy() throws {
            proxy.stop()
            proxy = try SensorProxyHarness(bus: bus)
        }

        func stop() {
            harness.stop()
            proxy?.stop()
            standIn?.stop(grace: 2)
            bus.stop()
        }
    }

    /// The compass's heading as the package's compass user reads it, twice `seconds` apart.
    @concurrent
    static func headingsApart(_ proxy: SensorProxyHarness, seconds: Double) async throws -> (Double, Double) {
        try await onOwnThread {
            let first = try proxy.heading()
            usleep(UInt32(seconds * 1_000_000))
            return (first, try proxy.heading())
        }
    }

    /// Waits until the compass has turned, read as its package's compass user, within `seconds`: its fake driver
    /// steps once a second on GLib's coarse timer, so two readings a fixed time apart may both fall between steps.
    @concurrent
    static func waitForTurning(_ proxy: SensorProxyHarness, seconds: Double = 10) async throws {
        try await onOwnThread {
            let first = try proxy.heading()
            let deadline = ContinuousClock.now + .seconds(seconds)
            while try proxy.heading() == first {
                guard ContinuousClock.now < deadline else {
                    throw TestEnvironmentError("the compass stayed at \(first) for \(seconds) s:\n\(proxy.process.log)")
                }
                usleep(100_000)
            }
        }
    }

    /// The `compass` row of `Providers`: (available, running, details).
    func compassRow(_ app: GeoClueTestClient) async throws -> (Bool, Bool, [String: DBusValue]) {
        let rows = try await app.get(GeoClueTestClient.managerPath, "io.github.whereabouts1.Manager", "Providers")
        for row in rows.elements ?? [] {
            guard let fields = row.fields, fields.count == 5, fields[0].string == "compass" else { continue }
            return (
                fields[2].bool ?? false, fields[3].bool ?? false,
                (fields[4].stringKeyedEntries ?? [:]).mapValues(\.unwrapped)
            )
        }
        throw TestEnvironmentError("no compass provider in \(rows)")
    }

    /// Polls until `condition` holds, for up to `seconds`.
    func eventually(_ what: String, seconds: Int = 15, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while try await !condition() {
            guard ContinuousClock.now < deadline else { throw TestEnvironmentError("never: \(what)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// The client's current Location object.
    func locationPath(_ app: GeoClueTestClient, _ path: ObjectPath) async throws -> ObjectPath? {
        guard let location = try await app.get(path, client, "Location").objectPath, location.description != "/"
        else { return nil }
        return location
    }

    /// The declination WMM2025 gives at a served fix's place, height above the ellipsoid and date.
    nonisolated static func declination(
        latitude: Double, longitude: Double, height: Double = 0, milliseconds: UInt64
    ) throws -> Double {
        let text = try String(contentsOf: modelFile, encoding: .utf8)
        let model = try MagneticModel.parse(cofText: text, file: modelFile.path)
        return try model.field(
            latitude: latitude, longitude: longitude, heightAboveEllipsoid: height,
            at: WallTime(microseconds: Int64(milliseconds) * 1_000)
        ).declination
    }

    /// `trueHeading - magnetic`, in -180...180.
    nonisolated static func turn(from magnetic: Double, to trueHeading: Double) -> Double {
        var turned = trueHeading - magnetic
        if turned > 180 { turned -= 360 }
        if turned < -180 { turned += 360 }
        return turned
    }

    /// Waits until the client's Location has a magnetic heading, and returns its extended properties.
    func headedLocation(_ app: GeoClueTestClient, _ path: ObjectPath) async throws -> [String: DBusValue] {
        var values: [String: DBusValue] = [:]
        try await eventually("a magnetic heading on the Location") {
            guard let location = try await locationPath(app, path) else { return false }
            values = try await app.getAll(location, extended)
            return values["MagneticHeading"]?.double?.isNaN == false
        }
        return values
    }

    @Test func theCompassIsClaimedOnlyWhileAnExactClientRunsAndItsHeadingsReachTheFix() async throws {
        let rig = try await onOwnThread { try Rig() }
        defer { rig.stop() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }

        // No exact client: the compass is left alone and does not turn.
        try await eventually("iio-sensor-proxy found") { try await compassRow(app).0 }
        var (_, running, details) = try await compassRow(app)
        #expect(!running && details["claimed"] == .boolean(false))
        let idle = try await Self.headingsApart(rig.proxy, seconds: 2.5)
        #expect(idle.0 == idle.1, "\(rig.harness.daemonLog)")

        // A city client does not claim it either.
        let city = try await app.startedClient(desktopId: "whereabouts-test", level: 4)
        _ = try await app.waitForUpdates(1)
        let cityIdle = try await Self.headingsApart(rig.proxy, seconds: 2.5)
        #expect(cityIdle.0 == cityIdle.1, "\(rig.harness.daemonLog)")
        _ = try await app.call(city, client, "Stop")

        // An exact client: claimed, the heading turns, and the fix carries it.
        let exact = try await app.startedClient(desktopId: "whereabouts-test", level: 8)
        try await eventually("the compass claimed") { try await compassRow(app).2["claimed"] == .boolean(true) }
        try await eventually("a magnetic heading on the Location") {
            guard let location = try await locationPath(app, exact) else { return false }
            return try await app.get(location, extended, "MagneticHeading").double?.isNaN == false
        }
        try await Self.waitForTurning(rig.proxy)
        let location = try #require(try await locationPath(app, exact))
        let values = try await app.getAll(location, extended)
        let magnetic = try #require(values["MagneticHeading"]?.double)
        let trueHeading = try #require(values["TrueHeading"]?.double)
        let declination = try Self.declination(
            latitude: try #require(values["Latitude"]?.double), longitude: try #require(values["Longitude"]?.double),
            milliseconds: try #require(values["TimestampMilliseconds"]?.uint64))
        let turned = Self.turn(from: magnetic, to: trueHeading)
        #expect(abs(turned - declination) <= 0.5, "true \(trueHeading), magnetic \(magnetic), D \(declination)")
        #expect(values["HeadingAccuracy"] == .double(HeadingCorrection.headingAccuracy))
        #expect((0..<360).contains(magnetic) && magnetic.truncatingRemainder(dividingBy: 10) == 0)
        #expect(values["Course"]?.double?.isNaN == true)
        // GeoClue's Heading is the compass's, uncorrected, as GeoClue 2.6 gives it: read between two equal reads of
        // MagneticHeading, as the compass may turn between two calls.
        try await eventually("two equal reads of MagneticHeading around one of Heading") {
            let magneticBefore = try await app.get(location, extended, "MagneticHeading").double
            let geoclueHeading = try await app.get(location, GeoClueTestClient.locationInterface, "Heading").double
            let magneticAfter = try await app.get(location, extended, "MagneticHeading").double
            guard magneticBefore == magneticAfter else { return false }
            #expect(geoclueHeading == magneticAfter)
            return true
        }
        (_, running, details) = try await compassRow(app)
        #expect(running && details["has-compass"] == .boolean(true))
        let harness = rig.harness
        let status = try await onOwnThread { try runCLI(harness, ["status"]) }
        #expect(status.output.contains("\n  compass: claimed, heading "), "\(status.output)")

        // The client stops: released, and the compass stands still again.
        _ = try await app.call(exact, client, "Stop")
        try await eventually("the compass released") { try await compassRow(app).2["claimed"] == .boolean(false) }
        try await Task.sleep(for: .milliseconds(500))
        let released = try await Self.headingsApart(rig.proxy, seconds: 2.5)
        #expect(released.0 == released.1, "\(rig.harness.daemonLog)\n\(rig.proxy.process.log)")
    }

    @Test func aRestartedSensorProxyIsClaimedAgain() async throws {
        let rig = try await onOwnThread { try Rig() }
        defer { rig.stop() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        let exact = try await app.startedClient(desktopId: "whereabouts-test", level: 8)
        try await eventually("the compass claimed") { try await compassRow(app).2["claimed"] == .boolean(true) }

        try await onOwnThread { try rig.restartProxy() }
        // Only the daemon claims: the new compass turns once it has claimed it again.
        try await Self.waitForTurning(rig.proxy, seconds: 20)
        #expect(try await compassRow(app).2["claimed"] == .boolean(true))
        _ = try await app.call(exact, client, "Stop")
    }

    /// A receiver on a pseudo-terminal the daemon reads as its NMEA source (`[network-nmea]`), and the rig.
    static func receiverRig() async throws -> (PseudoTerminal, Rig) {
        let pty = try PseudoTerminal()
        guard chmod(pty.slavePath, 0o666) == 0 else { throw TestEnvironmentError("cannot open up \(pty.slavePath)") }
        let source = "[network-nmea]\nenable=true\ndevice=\(pty.slavePath)\n"
        return (pty, try await onOwnThread { try Rig(config: Self.config(source: source)) })
    }

    @Test func receiverFixesKeepTheirCourseAndGetTheDeclinationAtTheirHeight() async throws {
        let (pty, rig) = try await Self.receiverRig()
        defer { rig.stop() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        // Helsinki, 30 m above the sea and 47.5 m above the ellipsoid, moving at 84.4 degrees: an epoch every 0.4 s.
        let feeder = BusActor.task {
            while !Task.isCancelled {
                let epoch = NMEAEpoch(
                    time: NMEA.wallNow(), latitude: 60.17, longitude: 24.94, altitude: 30, geoidSeparation: 17.5,
                    course: 84.4)
                pty.write(epoch.text)
                try? await Task.sleep(for: .milliseconds(400))
            }
        }
        defer { feeder.cancel() }
        let exact = try await app.startedClient(desktopId: "whereabouts-test", level: 8)
        let values = try await headedLocation(app, exact)
        #expect(values["Provider"] == .string("nmea"))
        #expect(values["Course"] == .double(84.4))
        let height = try #require(values["EllipsoidalAltitude"]?.double)
        #expect(abs(height - 47.5) < 0.01)
        let magnetic = try #require(values["MagneticHeading"]?.double)
        let trueHeading = try #require(values["TrueHeading"]?.double)
        let declination = try Self.declination(
            latitude: 60.17, longitude: 24.94, height: height,
            milliseconds: try #require(values["TimestampMilliseconds"]?.uint64))
        #expect(abs(Self.turn(from: magnetic, to: trueHeading) - declination) <= 0.5, "D \(declination)")

        // `whereabouts watch --json` carries the headings, the receiver's course beside them.
        let harness = rig.harness
        let watched = try await onOwnThread { try runCLI(harness, ["watch", "--json", "--count", "3"]) }
        #expect(watched.code == 0, "\(watched.output)")
        let objects = watched.output.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
        #expect(objects.count == 3, "\(watched.output)")
        for object in objects {
            #expect(object["course"] as? Double == 84.4, "\(object)")
            let cliMagnetic = try #require(object["magneticHeading"] as? Double, "\(object)")
            let cliTrue = try #require(object["trueHeading"] as? Double, "\(object)")
            #expect(abs(Self.turn(from: cliMagnetic, to: cliTrue) - declination) <= 0.5, "\(object)")
            #expect(object["headingAccuracy"] as? Double == HeadingCorrection.headingAccuracy)
        }
        _ = try await app.call(exact, client, "Stop")
    }

    @Test func theTrueHeadingFollowsTheDeclinationAtThreePlacesAndDates() async throws {
        let (pty, rig) = try await Self.receiverRig()
        defer { rig.stop() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        // Each far from the others in declination; the dates rise, as a receiver's do: Svalbard in January 2025,
        // Borneo in September 2025, the South Island of New Zealand now.
        let places: [(latitude: Double, longitude: Double, time: Double)] = [
            (78.22, 15.65, 1_736_942_400), (1.0, 114.0, 1_756_684_800), (-45.87, 170.5, NMEA.wallNow()),
        ]
        let exact = try await app.startedClient(desktopId: "whereabouts-test", level: 8)
        for (index, place) in places.enumerated() {
            let feeder = BusActor.task {
                var time = place.time
                while !Task.isCancelled {
                    pty.write(NMEAEpoch(time: time, latitude: place.latitude, longitude: place.longitude).text)
                    time += 0.4
                    try? await Task.sleep(for: .milliseconds(400))
                }
            }
            defer { feeder.cancel() }
            var values: [String: DBusValue] = [:]
            try await eventually("a headed fix at place \(index)") {
                guard let location = try await locationPath(app, exact) else { return false }
                values = try await app.getAll(location, extended)
                return values["Latitude"] == .double(place.latitude) && values["TrueHeading"]?.double?.isNaN == false
            }
            let magnetic = try #require(values["MagneticHeading"]?.double)
            let trueHeading = try #require(values["TrueHeading"]?.double)
            let milliseconds = try #require(values["TimestampMilliseconds"]?.uint64)
            #expect(abs(Double(milliseconds) / 1000 - place.time) < 60, "the fix's date is the receiver's")
            let declination = try Self.declination(
                latitude: place.latitude, longitude: place.longitude,
                height: values["EllipsoidalAltitude"]?.double.flatMap { $0.isNaN ? nil : $0 } ?? 0,
                milliseconds: milliseconds)
            let turned = Self.turn(from: magnetic, to: trueHeading)
            print("place \(index): declination \(declination), true minus magnetic \(turned)")
            #expect(abs(turned - declination) <= 0.5, "place \(index): D \(declination), turned \(turned)")
        }
        _ = try await app.call(exact, client, "Stop")
    }

    @Test func aNamedModelFileThatIsMissingLeavesOnlyTheMagneticHeading() async throws {
        let config = Self.config(source: Self.staticSource, model: "/nonexistent/WMM.COF")
        let rig = try await onOwnThread { try Rig(config: config) }
        defer { rig.stop() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        let exact = try await app.startedClient(desktopId: "whereabouts-test", level: 8)
        let values = try await headedLocation(app, exact)
        #expect(values["TrueHeading"]?.double?.isNaN == true)
        #expect(values["HeadingAccuracy"] == .double(HeadingCorrection.headingAccuracy))
        #expect(rig.harness.daemonLog.contains("no magnetic model at /nonexistent/WMM.COF"), "\(rig.harness.daemonLog)")
        #expect(rig.harness.daemon?.isRunning == true)
        _ = try await app.call(exact, client, "Stop")
    }

    @Test func readingsThatAreNoHeadingAreIgnoredWithALimitedLog() async throws {
        // A good reading, 20 that are no heading, a pause for the log's limit to refill, one more bad one and a
        // last good reading.
        let bad = Array(repeating: ["nan", "inf", "-inf", "-1", "360.5", "1e9"], count: 4).joined().prefix(20)
        let readings = ["45"] + bad + ["pause", "400", "90"]
        let rig = try await onOwnThread { try Rig(standInReadings: readings) }
        defer { rig.stop() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        let exact = try await app.startedClient(desktopId: "whereabouts-test", level: 8)
        var seen: Set<Double> = []
        try await eventually("the last good reading on the Location") {
            guard let location = try await locationPath(app, exact),
                let magnetic = try await app.get(location, extended, "MagneticHeading").double
            else { return false }
            if !magnetic.isNaN { seen.insert(magnetic) }
            return magnetic == 90
        }
        #expect(seen.isSubset(of: [45, 90]), "\(seen)")
        let log = rig.harness.daemonLog
        let ignored = log.components(separatedBy: "\n").filter { $0.contains("ignored CompassHeading") }
        // Five at once, then one every 2 s: the burst's five, and after the pause the one that says how many
        // were left out.
        #expect(ignored.count == 6, "\(log)")
        #expect(ignored.last?.contains("(15 more since the last)") == true, "\(log)")
        #expect(rig.harness.daemon?.isRunning == true)
        _ = try await app.call(exact, client, "Stop")
    }
}
