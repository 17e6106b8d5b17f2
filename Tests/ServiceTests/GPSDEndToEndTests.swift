import DBus
import Foundation
import Glibc
import Loop
import TestSupport
import Testing
import Whereabouts

/// A configuration with only the gpsd source, at 127.0.0.1:`port`.
func gpsdConfig(port: UInt16, extra: String = "") -> String {
    """
    [gpsd]
    enable=true
    host=127.0.0.1
    port=\(port)

    """ + extra
}

/// A folder for gpsd's and gpsfake's logs and tracks.
@concurrent
func gpsdScratchDirectory() async throws -> URL { try TemporaryDirectory.make(prefix: "whereabouts-gpsd") }

@Suite("gpsd provider, end to end (real gpsd)", .serialized)
@BusActor
struct GPSDEndToEndTests {
    let client = GeoClueTestClient.clientInterface
    let location = GeoClueTestClient.locationInterface

    /// A client set up at exact accuracy but not started.
    func exactClient(_ app: GeoClueTestClient) async throws -> ObjectPath {
        let path = try await app.getClient()
        try await app.set(path, client, "DesktopId", .string("whereabouts-test"))
        try await app.set(path, client, "RequestedAccuracyLevel", .uint32(8))
        return path
    }

    @Test func gpsfakeFixesReachClientsWithGPSDsFiguresOneUpdatePerEpoch() async throws {
        let directory = try await gpsdScratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // 450 epochs of GGA, GSA, RMC and GST at 0.1 s per sentence: one epoch every 0.4 s for three minutes, more
        // than the test needs even on a loaded machine, so the log never loops (a loop would go back in time).
        // Every field changes from epoch to epoch, so a value can only match the fix it came with.
        let step = 0.4
        let first = NMEA.wallNow().rounded(.down) + 2
        var epochs: [NMEAEpoch] = []
        for index in 0..<450 {
            let n = Double(index)
            let time: Double = first + n * step
            let course: Double = Double(index * 7 % 360) + 0.5
            let hdop: Double = [0.9, 1.3, 1.7][index % 3]
            epochs.append(
                NMEAEpoch(
                    time: time, latitude: 48.1173 + n * 0.00002, longitude: 11.5166 + n * 0.00003,
                    altitude: 545.4 + Double(index % 9), speedKnots: 22.4 + Double(index % 5), course: course,
                    hdop: hdop, includesGST: true))
        }
        let log = directory.appendingPathComponent("track.nmea")
        try write(epochs.map { $0.text }.joined(), to: log)
        let port = try LoopbackTCP.freePort()
        let fake = try await GPSFake.start(
            log: log, port: port, cycle: 0.1, logFile: directory.appendingPathComponent("gpsfake.log"))
        defer { fake.stop() }
        let watcher = try GPSDWatcher(port: port)
        defer { watcher.close() }
        // gpsd reports partial fixes, sentence by sentence and without a time, until it has seen a whole epoch;
        // from then on it reports once per epoch. The daemon's client starts after that.
        let synced = try await watcher.timedFix(timeout: .seconds(20))
        _ = try await watcher.timedFix(after: synced.receivedAt)

        let harness = try await startedHarness(config: gpsdConfig(port: port))
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let path = try await exactClient(app)
        _ = try await app.call(path, client, "Start")

        // The first update may be gpsd's answer to ?POLL, taken at whatever point of an epoch the client
        // started and completed in place by the epoch's own report
        // (aClientStartedMidEpochGetsOneUpdatePerEpochWithThatEpochsData covers it); the streamed reports after it
        // are checked here.
        // A test process starved on a loaded machine misses objects released before it read them; it reads on
        // until it holds six.
        let read = Array(try await app.readLocations(count: 100, untilRead: 7, timeout: .seconds(60)).dropFirst())
        let fixes = read.compactMap { $0 }
        #expect(fixes.count >= 4, "the test fell too far behind to check the fixes")
        for fix in fixes {
            let time = try #require(locationTimestamp(fix["Timestamp"]), "\(fix)")
            let epoch = try #require(epochs.first { abs($0.time - time) < 0.0005 }, "no epoch at \(time)")
            let reports = try await watcherReports(watcher, at: time)
            let tpv = try #require(reports.first, "gpsd sent no TPV for \(time)")
            #expect(reports.count == 1, "gpsd sent \(reports.count) TPVs for one epoch")
            let latitude = fix["Latitude"]?.double ?? .nan
            let longitude = fix["Longitude"]?.double ?? .nan
            #expect(abs(latitude - (tpv.numbers["lat"] ?? .nan)) < 1e-9 && abs(latitude - epoch.latitude) < 1e-7)
            #expect(abs(longitude - (tpv.numbers["lon"] ?? .nan)) < 1e-9 && abs(longitude - epoch.longitude) < 1e-7)
            // Altitude above mean sea level, as GGA gives it and gpsd passes it on (not the ellipsoidal one).
            let altitude = fix["Altitude"]?.double ?? .nan
            #expect(altitude == tpv.numbers["altMSL"] && abs(altitude - epoch.altitude) < 0.001, "Altitude \(altitude)")
            // Speed in metres per second, heading in degrees.
            let speed = fix["Speed"]?.double ?? .nan
            #expect(
                abs(speed - (tpv.numbers["speed"] ?? .nan)) < 1e-9 && abs(speed - epoch.speed) < 0.001, "Speed \(speed)"
            )
            let heading = fix["Heading"]?.double ?? .nan
            #expect(
                abs(heading - (tpv.numbers["track"] ?? .nan)) < 1e-9 && abs(heading - epoch.course) < 1e-6,
                "Heading \(heading)")
            // Accuracy is gpsd's own 95% figure, eph, not 0 and not a figure of ours derived from HDOP.
            let accuracy = fix["Accuracy"]?.double ?? .nan
            let eph = try #require(tpv.numbers["eph"], "gpsd gave no eph: \(tpv.line)")
            #expect(accuracy == eph && accuracy > 0, "Accuracy \(accuracy), gpsd's eph \(eph)")
            #expect(fix["Description"] == .string("gpsd 3D fix"))
        }
        // Several HDOPs went by, so several accuracies: the figure is per fix.
        #expect(Set(fixes.compactMap { $0["Accuracy"]?.double }).count >= 2)

        // One LocationUpdated per epoch: consecutive objects, each announcing the next, hold consecutive epochs.
        let updates = Array(app.locationUpdates.prefix(read.count + 1))
        for (index, update) in updates.enumerated() {
            #expect(update.new == path.appending("Location").appending(String(index)))
            #expect(update.old == (index == 0 ? .root : updates[index - 1].new))
        }
        for (earlier, later) in zip(read, read.dropFirst()) {
            guard let a = locationTimestamp(earlier?["Timestamp"]), let b = locationTimestamp(later?["Timestamp"])
            else { continue }
            #expect(abs(b - a - step) < 0.001, "consecutive updates \(b - a) s of fix time apart")
        }
    }

    @Test func gpsdsSkyReachesTheExactClientsOwnerWithTheFixTypeAndDOPs() async throws {
        let directory = try await gpsdScratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = NMEA.wallNow().rounded(.down) + 2
        var epochs: [NMEAEpoch] = []
        for index in 0..<300 {
            var epoch = NMEAEpoch(
                time: first + Double(index) * 0.6, latitude: 48.1173, longitude: 11.5166 + Double(index) * 0.00003)
            epoch.includesSky = true
            epochs.append(epoch)
        }
        let log = directory.appendingPathComponent("track.nmea")
        try write(epochs.map { $0.text }.joined(), to: log)
        let port = try LoopbackTCP.freePort()
        let fake = try await GPSFake.start(
            log: log, port: port, cycle: 0.1, logFile: directory.appendingPathComponent("gpsfake.log"))
        defer { fake.stop() }
        let harness = try await startedHarness(config: gpsdConfig(port: port))
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let path = try await exactClient(app)
        let ours = "io.github.whereabouts1.Client"
        _ = try await app.getAll(path, ours)
        _ = try await app.call(path, client, "Start")
        func names(_ sky: [DBusValue]) -> [String] {
            sky.compactMap(\.fields).map {
                "\($0[0].string ?? "") \($0[1].uint32 ?? 0)\($0[5].bool == true ? " used" : "")"
            }
        }
        let expected = ["gps 4 used", "gps 5 used", "gps 7", "gps 9 used", "gps 30", "glonass 6", "glonass 7"]
        try await app.waitFor("gpsd's sky signalled", timeout: .seconds(30)) {
            app.signals.contains {
                $0.member == "SatellitesChanged" && names($0.arguments().first?.elements ?? []) == expected
            }
        }
        let sky = try await app.get(path, ours, "Satellites").elements ?? []
        #expect(names(sky) == expected)
        let gps4 = try #require(sky.first?.fields)
        #expect(gps4[2] == .double(60) && gps4[3] == .double(100) && gps4[4] == .double(45))
        // A TPV carries the dilutions of the SKY before it; the first epoch's may come before any SKY. The second
        // update after the sky was signalled comes from a TPV read after that SKY.
        let skySignal = try #require(
            app.signals.firstIndex {
                $0.member == "SatellitesChanged" && names($0.arguments().first?.elements ?? []) == expected
            })
        func updatesAfterSky() -> [ObjectPath] {
            app.signals[(skySignal + 1)...].filter { $0.member == "LocationUpdated" }.compactMap {
                $0.arguments().last?.objectPath
            }
        }
        try await app.waitFor("two updates after the sky", timeout: .seconds(30)) { updatesAfterSky().count >= 2 }
        let location = updatesAfterSky()[1]
        let values = try await app.getAll(location, "io.github.whereabouts1.Location")
        #expect(values["FixType"] == .string("3d"), "\(values)")
        for dop in ["HDOP", "VDOP", "PDOP"] {
            #expect(values[dop]?.double.map { $0.isFinite && $0 > 0 } == true, "\(dop): \(values)")
        }
    }

    @Test func aClientStartedMidEpochGetsOneUpdatePerEpochWithThatEpochsData() async throws {
        // An epoch takes a while on the wire (GGA, GSA and RMC are some 220 bytes: half a second at 4800 baud),
        // so a client often starts while gpsd holds an epoch's GGA but not yet its RMC. gpsd's answer to ?POLL
        // is then a partial fix: the new position and time, no course, and a speed gpsd derived from the jump.
        // Whatever serves a new client at once must neither add a second LocationUpdated for that epoch when its
        // full report follows, nor serve one epoch's position with another's motion.
        let directory = try await gpsdScratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let terminal = try ReceiverTerminal()
        defer { terminal.close() }
        let port = try LoopbackTCP.freePort()
        let gpsd = GPSDProcess(device: terminal.path, port: port, logFile: directory.appendingPathComponent("gpsd.log"))
        try await gpsd.start()
        defer { gpsd.stop() }
        let watcher = try GPSDWatcher(port: port)
        defer { watcher.close() }
        // Northwards at 10 m/s (19.44 kn), one epoch a second of fix time, written every 150 ms.
        let first = NMEA.wallNow().rounded(.down) - 10
        let metre = 1 / 111_195.0
        func epoch(_ index: Int, knots: Double = 19.44, course: Double = 0) -> NMEAEpoch {
            NMEAEpoch(
                time: first + Double(index), latitude: 46.0 + Double(index) * 10 * metre, longitude: 7.0,
                speedKnots: knots, course: course)
        }
        for index in 0..<3 {
            terminal.write(epoch(index).text)
            try await Task.sleep(for: .milliseconds(150))
        }
        let synced = try await watcher.timedFix()
        _ = try await watcher.timedFix(after: synced.receivedAt)

        // Epoch 3 has turned east and sped up; gpsd has only its GGA when the client starts.
        let turned = epoch(3, knots: 29.16, course: 90)
        terminal.write(turned.sentences[0])
        try await Task.sleep(for: .milliseconds(200))
        let harness = try await startedHarness(config: gpsdConfig(port: port))
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let path = try await exactClient(app)
        _ = try await app.call(path, client, "Start")
        // The receiver is silent mid-epoch, so only gpsd's answer to ?POLL can serve the client: epoch 3's time
        // and position, before its course is known.
        let served = try await app.waitForUpdates(1)
        let partial = try #require(try await app.latestLocation())
        #expect(locationTimestamp(partial["Timestamp"]) == first + 3, "\(partial)")
        #expect(abs((partial["Latitude"]?.double ?? 0) - turned.latitude) < 1e-7, "\(partial)")
        // The library's stream, started now too, is served the same partial fix, then the completed one.
        let manager = try LocationManager(desktopId: "whereabouts-test", address: harness.bus.address)
        defer { manager.close() }
        let streamed = Shared<[Position]>([])
        let streaming = Task { @BusActor in
            for try await position in manager.locations() { streamed.update { $0.append(position) } }
        }
        try await eventually("the library's first fix") { !streamed.value.isEmpty }
        terminal.write(turned.sentences[1...].joined())
        try await Task.sleep(for: .milliseconds(150))
        terminal.write(epoch(4, knots: 29.16, course: 90).text)
        try await eventually("gpsd to report epoch 4") { watcher.fixes.contains { $0.time == first + 4 } }
        try await eventually("the library to be served epoch 4") {
            streamed.value.contains { $0.timestamp == Int64((first + 4) * 1000) }
        }

        // Epoch 3's own report completed the Location served for it, in place.
        #expect(app.signals.contains { $0.member == "PropertiesChanged" && $0.path == served[0].new })
        let epoch3 = streamed.value.filter { $0.timestamp == Int64((first + 3) * 1000) }
        #expect(epoch3.first?.course == nil, "the library's first fix was already complete: \(epoch3)")
        #expect(epoch3.count == 2 && abs((epoch3.last?.course ?? 0) - 90) < 1e-6, "\(streamed.value)")
        await manager.endStreams()
        #expect(try await streaming.value == ())
        let count = app.locationUpdates.count
        let read = try await app.readLocations(count: count)
        let fixes = read.compactMap { $0 }
        #expect(fixes.count == count, "some Location objects were gone before they could be read")
        let times = fixes.compactMap { locationTimestamp($0["Timestamp"]) }
        print("client started mid-epoch: \(count) updates, fix times \(times.map { $0 - first })")
        #expect(times.contains(first + 4), "epoch 4 never reached the client")
        #expect(
            Set(times).count == times.count, "more than one LocationUpdated for one epoch: \(times.map { $0 - first })")
        for fix in fixes {
            guard let time = locationTimestamp(fix["Timestamp"]) else { continue }
            let tpv = try #require(watcher.fixes.first { $0.time == time }, "gpsd never reported a fix at \(time)")
            #expect(fix["Speed"]?.double == tpv.numbers["speed"], "epoch \(time - first): \(fix) against \(tpv.line)")
            #expect(fix["Heading"]?.double == tpv.numbers["track"], "epoch \(time - first): \(fix) against \(tpv.line)")
        }
    }

    /// The TPVs the plain watcher got for the epoch at `time` (waiting briefly: it may lag the daemon).
    func watcherReports(_ watcher: GPSDWatcher, at time: Double) async throws -> [GPSDReport] {
        let matching: @Sendable () -> [GPSDReport] = { watcher.fixes.filter { abs(($0.time ?? 0) - time) < 0.0005 } }
        try? await eventually("the watcher to see the TPV at \(time)", timeout: .seconds(5)) { !matching().isEmpty }
        return matching()
    }

    @Test func gpsdKilledAndRestartedDropsAvailabilityThenFixesResume() async throws {
        let directory = try await gpsdScratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let terminal = try ReceiverTerminal()
        defer { terminal.close() }
        let port = try LoopbackTCP.freePort()
        let gpsd = GPSDProcess(device: terminal.path, port: port, logFile: directory.appendingPathComponent("gpsd.log"))
        try await gpsd.start()
        defer { gpsd.stop() }
        // A receiver at 5 Hz, at 48.1° N before the restart and 52.5° N after it.
        let restarted = Shared(false)
        let feeder = NMEAFeeder(terminal: terminal, interval: .milliseconds(200)) { index, now in
            NMEAEpoch(time: now, latitude: restarted.value ? 52.5 : 48.1, longitude: 11.5 + Double(index) * 0.00001)
        }
        feeder.start()
        defer { feeder.stop() }
        let watcher = try GPSDWatcher(port: port)
        _ = try await watcher.timedFix()
        watcher.close()

        let harness = try await startedHarness(config: gpsdConfig(port: port))
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let path = try await app.startedClient(level: 8)
        _ = try await app.waitForUpdates(2)
        #expect(try await app.availableLevel() == 8)
        #expect(app.announcedAvailableLevels.isEmpty)

        // gpsd dies without a goodbye: availability drops at once, with PropertiesChanged.
        let killed = ContinuousClock.now
        try await gpsd.kill()
        try await app.waitFor("AvailableAccuracyLevel 0 announced") { app.announcedAvailableLevels.last == 0 }
        print("gpsd killed: AvailableAccuracyLevel 0 announced after \((ContinuousClock.now - killed).seconds) s")
        #expect(try await app.availableLevel() == 0)

        // The daemon keeps serving: the client is still active, and a new connection gets a client.
        #expect(harness.daemon?.isRunning == true, "\(harness.daemonLog)")
        #expect(try await app.get(path, client, "Active") == .boolean(true))
        let other = try await GeoClueTestClient(bus: harness.bus)
        defer { other.close() }
        let otherPath = try await other.getClient()
        #expect(try await other.get(otherPath, client, "Active") == .boolean(false))
        // Let the provider retry (and back off) a few times before gpsd returns.
        try await Task.sleep(for: .milliseconds(600))
        #expect(try await app.availableLevel() == 0)
        let whileAway = app.announcedAvailableLevels
        #expect(whileAway == [0], "no flapping while gpsd is away")

        restarted.value = true
        let restarting = ContinuousClock.now
        try await gpsd.start()
        try await app.waitFor("AvailableAccuracyLevel 8 announced again", timeout: .seconds(15)) {
            app.announcedAvailableLevels.last == 8
        }
        print(
            "gpsd restarted: AvailableAccuracyLevel 8 announced after \((ContinuousClock.now - restarting).seconds) s")
        #expect(app.announcedAvailableLevels == whileAway + [8])
        #expect(try await app.availableLevel() == 8)
        // Fixes resume, from the new position.
        let deadline = ContinuousClock.now + .seconds(15)
        var latitude: Double?
        while ContinuousClock.now < deadline {
            latitude = try? await app.latestLocation()?["Latitude"]?.double
            if let latitude, abs(latitude - 52.5) < 1e-6 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        print("gpsd restarted: fixes resumed after \((ContinuousClock.now - restarting).seconds) s")
        #expect(latitude.map { abs($0 - 52.5) < 1e-6 } == true, "latest latitude \(String(describing: latitude))")
        #expect(harness.daemon?.isRunning == true)
        let log = harness.daemonLog
        let connections = log.components(separatedBy: "gpsd: connected to 127.0.0.1:\(port)").count - 1
        #expect(connections == 2 + whileAway.count / 2, "\(log)")
    }

    @Test func aClientStartedWhileGPSDHasAFixGetsItAtOnce() async throws {
        let directory = try await gpsdScratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let terminal = try ReceiverTerminal()
        defer { terminal.close() }
        let port = try LoopbackTCP.freePort()
        let gpsd = GPSDProcess(device: terminal.path, port: port, logFile: directory.appendingPathComponent("gpsd.log"))
        try await gpsd.start()
        defer { gpsd.stop() }
        let watcher = try GPSDWatcher(port: port)
        defer { watcher.close() }
        // gpsd gets a fix, then the receiver falls silent: only gpsd's memory of that fix (?POLL) can serve a
        // client now. (A 1 Hz receiver would be the same for up to a second; silence makes the check exact.)
        let feeder = NMEAFeeder(terminal: terminal, interval: .milliseconds(150)) { _, now in
            NMEAEpoch(time: now, latitude: 47.3769, longitude: 8.5417)
        }
        feeder.start()
        let synced = try await watcher.timedFix()
        _ = try await watcher.timedFix(after: synced.receivedAt)
        feeder.stop()
        await feeder.stopped()

        let harness = try await startedHarness(config: gpsdConfig(port: port))
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let path = try await exactClient(app)
        let started = ContinuousClock.now
        _ = try await app.call(path, client, "Start")
        let first = try? await app.waitForUpdates(1, timeout: .seconds(2))
        let elapsed = ContinuousClock.now - started
        print(
            "first client while gpsd has a fix: Start → LocationUpdated \(first == nil ? "none within 2 s" : "\(elapsed.seconds) s")"
        )
        #expect(first != nil, "no LocationUpdated within 2 s while gpsd had a fix")
        // It is gpsd's latest report, whole: the same fix time, position, speed, heading and accuracy.
        let fix = try #require(try await app.latestLocation())
        let tpv = try #require(watcher.fixes.last { $0.time != nil })
        let time = try #require(locationTimestamp(fix["Timestamp"]))
        #expect(abs(time - (tpv.time ?? 0)) < 0.0005, "\(fix) against \(tpv.line)")
        #expect(fix["Latitude"]?.double == tpv.numbers["lat"] && fix["Longitude"]?.double == tpv.numbers["lon"])
        #expect(abs((fix["Latitude"]?.double ?? 0) - 47.3769) < 1e-7)
        #expect(fix["Speed"]?.double == tpv.numbers["speed"] && fix["Heading"]?.double == tpv.numbers["track"])
        #expect(fix["Accuracy"]?.double == tpv.numbers["eph"] && fix["Altitude"]?.double == tpv.numbers["altMSL"])
        #expect(app.locationUpdates.count == 1, "the answer to ?POLL was signalled more than once")

        // A second client, while the provider runs, gets the latest fix from the service at once.
        let second = try await GeoClueTestClient(bus: harness.bus)
        defer { second.close() }
        let secondPath = try await exactClient(second)
        let secondStarted = ContinuousClock.now
        _ = try await second.call(secondPath, client, "Start")
        _ = try await second.waitForUpdates(1, timeout: .seconds(10))
        let secondElapsed = ContinuousClock.now - secondStarted
        print("second client while gpsd has a fix: Start → LocationUpdated \(secondElapsed.seconds) s")
        #expect(abs((try await second.latestLocation()?["Latitude"]?.double ?? 0) - 47.3769) < 1e-7)
    }

    @Test func aReceiverWhoseDatesLieInThePastKeepsDeliveringAfterGPSDsFirstPartialReports() async throws {
        // gpsfake replaying a recorded log, or a receiver hit by the GPS week-number rollover: fix times far
        // behind the system clock. gpsd's first reports of a session carry no time (it has no date before the
        // first RMC); the provider stamps those with the system time, and the fusion rule then drops every later
        // fix of that provider as older.
        let directory = try await gpsdScratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let terminal = try ReceiverTerminal()
        defer { terminal.close() }
        let port = try LoopbackTCP.freePort()
        let gpsd = GPSDProcess(device: terminal.path, port: port, logFile: directory.appendingPathComponent("gpsd.log"))
        try await gpsd.start()
        defer { gpsd.stop() }
        let watcher = try GPSDWatcher(port: port)
        defer { watcher.close() }

        let harness = try await startedHarness(config: gpsdConfig(port: port))
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        _ = try await app.startedClient(level: 8)
        try await app.waitFor("the provider to connect to gpsd") {
            harness.daemonLog.contains("gpsd: connected to 127.0.0.1:\(port)")
        }

        let yearsAgo = 2.0 * 365 * 86_400
        let feeder = NMEAFeeder(terminal: terminal, interval: .milliseconds(100)) { index, now in
            NMEAEpoch(time: now - yearsAgo, latitude: 45.0 + Double(index) * 0.0001, longitude: 7.0)
        }
        feeder.start()
        defer { feeder.stop() }
        try await eventually("gpsd to report 8 fixes with a time") {
            watcher.fixes.filter { $0.time != nil }.count >= 8
        }
        let latest = try #require(watcher.fixes.last { $0.time != nil })
        // The daemon has had time to pass on what gpsd sent before that fix.
        try await Task.sleep(for: .milliseconds(300))
        let served = try await app.latestLocation()
        let servedTime = locationTimestamp(served?["Timestamp"])
        #expect(served != nil, "no fix at all reached the client")
        print(
            "receiver dated in the past: \(app.locationUpdates.count) updates; latest served fix time \(servedTime ?? 0), gpsd's \(latest.time ?? 0)"
        )
        #expect(servedTime.map { $0 < NMEA.wallNow() - yearsAgo + 60 } == true, "the served fix is not the receiver's")
    }
}
