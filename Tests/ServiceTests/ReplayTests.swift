import DBus
import Foundation
import Loop
import TestSupport
import Testing

/// A configuration replaying `@DIR@/<file>` at `speed` times real time.
func replayConfig(file: String = "track.nmea", speed: Double) -> String {
    """
    [replay]
    enable=true
    path=@DIR@/\(file)
    speed=\(speed)
    """
}

@Suite("Replay source, end to end")
@BusActor
struct ReplayTests {
    let client = GeoClueTestClient.clientInterface
    let location = GeoClueTestClient.locationInterface

    /// The recorded ground speed of ``nmeaTrack(count:startSecond:)``: 19.438 knots.
    static let recordedSpeed = 19.438 * 1852 / 3600

    /// A client with `DesktopId`, exact accuracy and the given thresholds set, then started.
    func startClient(_ app: GeoClueTestClient, distance: UInt32 = 0, time: UInt32 = 0) async throws -> ObjectPath {
        let path = try await app.getClient()
        try await app.set(path, client, "DesktopId", .string("whereabouts-test"))
        try await app.set(path, client, "RequestedAccuracyLevel", .uint32(8))
        try await app.set(path, client, "DistanceThreshold", .uint32(distance))
        try await app.set(path, client, "TimeThreshold", .uint32(time))
        _ = try await app.call(path, client, "Start")
        return path
    }

    @Test func replayedFixesMoveEastOneUpdatePerFix() async throws {
        // Real time gives a test process slowed by a loaded machine a second to read each object, and the four a
        // client keeps four seconds before the oldest goes (at 2× a full run on two cores once read 1 of 20).
        let speed = 1.0
        let harness = try await startedHarness(
            config: replayConfig(speed: speed), files: ["track.nmea": nmeaTrack(count: 30)])
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let level = try await app.get(
            GeoClueTestClient.managerPath, GeoClueTestClient.managerInterface, "AvailableAccuracyLevel")
        #expect(level == .uint32(8))
        let path = try await startClient(app)

        // 20 updates take about 20 s, within the first pass of the 30 s track.
        let read = try await app.readLocations(count: 20, timeout: .seconds(60))
        let fixes = read.compactMap { $0 }
        print("replay: read \(fixes.count) of \(read.count) Location objects as they were announced")
        #expect(fixes.count >= 5, "the test fell too far behind to check the fixes")
        for fix in fixes {
            let description = fix["Description"]?.string ?? ""
            #expect(description.contains("Replay") && description.contains("track.nmea"), "\(description)")
            // The replay scales speed by its speed factor, so that speed agrees with how fast positions move.
            let reported = fix["Speed"]?.double ?? .nan
            #expect(abs(reported - ReplayTests.recordedSpeed * speed) <= 0.5 * speed, "Speed \(reported)")
            #expect(abs((fix["Heading"]?.double ?? .nan) - 90) <= 1, "Heading \(String(describing: fix["Heading"]))")
            let accuracy = fix["Accuracy"]?.double ?? .nan
            #expect(accuracy.isFinite && accuracy > 0, "Accuracy \(accuracy)")
            #expect(abs((fix["Latitude"]?.double ?? .nan) - 48) < 1e-6)
            #expect((fix["Altitude"]?.double ?? .nan) == 545.4)
        }

        // One LocationUpdated per epoch (GGA+RMC), each announcing the next object of a chain.
        let updates = Array(app.locationUpdates.prefix(20))
        for (index, update) in updates.enumerated() {
            #expect(update.new == path.appending("Location").appending(String(index)))
            #expect(update.old == (index == 0 ? .root : updates[index - 1].new))
        }
        let longitudes = fixes.compactMap { $0["Longitude"]?.double }
        #expect(Set(longitudes).count == longitudes.count, "repeated positions: \(longitudes)")
        #expect(longitudes.count == fixes.count, "a Location without Longitude")
        for (earlier, later) in zip(longitudes, longitudes.dropFirst()) {
            #expect(later > earlier, "not moving east: \(earlier) then \(later)")
        }
        // Fix time advances 0.1 s per update at 10×: twenty updates span about 2 s of track, not 1 s.
        var previous: (index: Int, time: Double)?
        for (index, fix) in read.enumerated() {
            guard let time = timestampSeconds(fix?["Timestamp"]) else { continue }
            if let previous {
                #expect(
                    time - previous.time >= Double(index - previous.index) * 0.1 - 0.001,
                    "updates \(previous.index) and \(index)")
            }
            previous = (index, time)
        }

        // After some 30 updates, only the newest few objects remain.
        _ = try await app.waitForUpdates(30, timeout: .seconds(60))
        _ = try await app.call(path, client, "Stop")
        let all = app.locationUpdates
        let latest = try #require(all.last)
        var readable: [ObjectPath] = []
        for index in 0..<all.count {
            let object = path.appending("Location").appending(String(index))
            do {
                _ = try await app.get(object, location, "Latitude")
                readable.append(object)
            } catch {
                #expect(error.name == DBusError.Name.unknownMethod, "\(object): \(error)")
                #expect(error.message.contains("Object does not exist"), "\(object): \(error)")
            }
        }
        print("replay: \(readable.count) of \(all.count) Location objects still readable")
        #expect(readable.count <= 4, "\(readable)")
        #expect(readable.contains(latest.old), "the old path of the latest update, \(latest.old), was released")
        #expect(readable.contains(latest.new))
        #expect(try await app.get(path, client, "Location") == .objectPath(latest.new))
    }

    @Test func distanceThresholdHoldsBackSmallMoves() async throws {
        let harness = try await startedHarness(
            config: replayConfig(speed: 10), files: ["track.nmea": nmeaTrack(count: 30)])
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        _ = try await startClient(app, distance: 1000)
        let first = try await app.waitForUpdates(1)[0].new
        let start = try #require(timestampSeconds(try await app.get(first, location, "Timestamp")))
        // Every 10 m step of the 290 m track is refreshed in place; wait until 2 s of fixes went by.
        func refreshes() -> [[String: DBusValue]] {
            app.signals.compactMap { message in
                guard message.member == "PropertiesChanged", message.path == first else { return nil }
                let arguments = message.arguments()
                guard arguments.first?.string == location else { return nil }
                return arguments[1].stringKeyedEntries
            }
        }
        try await app.waitFor("2 s of fixes refreshed in place", timeout: .seconds(30)) {
            app.locationUpdates.count > 1
                || refreshes().contains { (timestampSeconds($0["Timestamp"]) ?? 0) >= start + 2 }
        }
        // Signals arrive in order, so any LocationUpdated sent before that refresh is already here.
        #expect(app.locationUpdates.count == 1, "\(app.locationUpdates.map(\.new))")
        #expect(refreshes().contains { ($0["Longitude"]?.double ?? 0) > 11.0 })
    }

    @Test func timeThresholdSpacesUpdates() async throws {
        let harness = try await startedHarness(
            config: replayConfig(speed: 1), files: ["track.nmea": nmeaTrack(count: 30)])
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        _ = try await startClient(app, time: 3)
        // A fix held back by the threshold refreshes the current object in place, so an object read late shows a
        // later fix; a read is only used when no refresh of that object arrived before its reply. The newest update
        // is read each time, so that a test slowed by a loaded machine skips what it missed rather than reading
        // objects already gone; it reads on (the track loops) until two consecutive ones were read in time.
        var originals: [Int: Double] = [:]
        let deadline = ContinuousClock.now + .seconds(180)
        while ContinuousClock.now < deadline, !originals.keys.contains(where: { originals[$0 + 1] != nil }) {
            let seen = app.locationUpdates.count
            _ = try await app.waitForUpdates(seen + 1, timeout: .seconds(30))
            let index = app.locationUpdates.count - 1
            let update = app.locationUpdates[index].new
            guard let values = try? await app.getAll(update, location) else { continue }
            let refreshed = app.signals.contains { $0.member == "PropertiesChanged" && $0.path == update }
            if !refreshed, let time = timestampSeconds(values["Timestamp"]) { originals[index] = time }
            // At real-time speed the recorded speed comes through unchanged.
            #expect(abs((values["Speed"]?.double ?? .nan) - ReplayTests.recordedSpeed) <= 0.5)
        }
        let pairs = originals.keys.sorted().compactMap { index in
            originals[index].flatMap { a in originals[index + 1].map { (a, $0) } }
        }
        #expect(!pairs.isEmpty, "no two consecutive updates could be read before their refresh")
        for (earlier, later) in pairs {
            #expect(later - earlier >= 3 - 0.001, "updates \(later - earlier) s of fix time apart")
            #expect(later - earlier < 4, "updates \(later - earlier) s of fix time apart")
        }
        // The fixes in between were not dropped but refreshed the current object.
        #expect(app.signals.contains { $0.member == "PropertiesChanged" && $0.path == app.locationUpdates[0].new })
    }

    @Test func gpxTracksReplay() async throws {
        let points = (0..<10).map { index in
            (latitude: 52.52 + Double(index) * 0.0001, longitude: 13.405, elevation: 34.0 + Double(index))
        }
        var gpx = """
            <?xml version="1.0" encoding="UTF-8"?>
            <gpx version="1.1" creator="whereabouts-tests" xmlns="http://www.topografix.com/GPX/1/1">
              <trk>
                <name>walk</name>
                <trkseg>

            """
        for (index, point) in points.enumerated() {
            gpx += "      <trkpt lat=\"\(point.latitude)\" lon=\"\(point.longitude)\">"
            gpx +=
                "<ele>\(point.elevation)</ele><time>2024-03-15T12:00:\(String(format: "%02d", index))Z</time></trkpt>\n"
        }
        gpx += "    </trkseg>\n  </trk>\n</gpx>\n"
        // Real time: an object stays readable for about four fixes after it is announced. The test reads on until
        // it has read five, however many it missed while the machine stalled; the track loops every 10 s.
        let harness = try await startedHarness(
            config: replayConfig(file: "track.gpx", speed: 1), files: ["track.gpx": gpx])
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        _ = try await startClient(app)
        let read = try await app.readLocations(count: 200, untilRead: 5, timeout: .seconds(240))
        #expect(read.compactMap { $0 }.count >= 5)
        if let first = read[0] {
            #expect(first["Latitude"] == .double(points[0].latitude), "playback starts at the first point")
        }
        var pointIndices: [Int?] = []
        for fix in read {
            guard let fix else {
                pointIndices.append(nil)
                continue
            }
            let latitude = try #require(fix["Latitude"]?.double)
            let index = try #require(
                points.firstIndex { abs($0.latitude - latitude) < 1e-9 }, "\(latitude) is no track point")
            #expect(fix["Longitude"] == .double(points[index].longitude))
            #expect(fix["Altitude"] == .double(points[index].elevation))
            #expect(fix["Description"] == .string("Replay of track.gpx"))
            let accuracy = fix["Accuracy"]?.double ?? .nan
            #expect(accuracy.isFinite && accuracy > 0)
            pointIndices.append(index)
        }
        // Each update is the track's next point, the first again after the last.
        let adjacent = zip(pointIndices, pointIndices.dropFirst()).compactMap { pair -> (Int, Int)? in
            guard let earlier = pair.0, let later = pair.1 else { return nil }
            return (earlier, later)
        }
        #expect(!adjacent.isEmpty, "no two consecutive updates read: \(pointIndices)")
        for (earlier, later) in adjacent {
            #expect(later == (earlier + 1) % points.count, "\(pointIndices)")
        }
    }
}
