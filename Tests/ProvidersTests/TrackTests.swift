import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// The error that parsing `text` as a track throws, or nil if it parses.
private func trackError(_ text: String, fileName: String = "t") -> TrackError? {
    do {
        _ = try Track.parse(text: text, fileName: fileName)
        return nil
    } catch {
        return error
    }
}

/// A fix for building tracks by hand.
func trackFix(_ latitude: Double, _ longitude: Double, at seconds: Double, speed: Double? = nil, course: Double? = nil)
    -> Fix
{
    Fix(
        latitude: latitude, longitude: longitude, horizontalAccuracy: 5, speed: speed, course: course,
        timestamp: march15.advanced(by: .milliseconds(Int64(seconds * 1000))), provider: .replay, description: "test")
}

@Suite("Tracks")
struct TrackTests {
    @Test func detectsGPX() throws {
        let track = try Track.parse(text: "\n  " + GPXDocumentTests.gpx11, fileName: "/home/me/walks/walk.gpx")
        #expect(track.format == .gpx)
        #expect(track.name == "walk.gpx")
        #expect(track.fixes.count == 3)
        let first = track.fixes[0]
        #expect(first.timestamp == utc(march15, 12, 0, 0))
        #expect(first.altitude == 545.4)
        #expect(abs(first.horizontalAccuracy - horizontalFactor * 0.9 * 4) < 1e-9)
        #expect(abs(try #require(first.verticalAccuracy) - 1.959_963_984_540_054 * 1.4 * 4) < 1e-9)
        #expect(first.isSimulated && first.provider == .replay)
        let second = track.fixes[1]
        #expect(abs(second.horizontalAccuracy - horizontalFactor * 2 * 4) < 1e-9)
        #expect(second.verticalAccuracy == nil)
        // The third point has no time: it follows the second by 1 s.
        #expect(track.fixes[2].timestamp == utc(march15, 12, 0, 2.25))
    }

    @Test func detectsNMEA() throws {
        let lines = [
            "# recorded by a test", "", NMEAFixture.gga("120000"), NMEAFixture.rmc("120000"), "$GPGGA,broken*00",
            NMEAFixture.gga("120001"), NMEAFixture.rmc("120001"), NMEAFixture.gga("120002"),
        ]
        let track = try Track.parse(
            text: "partial line,A*1F\r\n" + lines.joined(separator: "\r\n"), fileName: "drive.nmea")
        #expect(track.format == .nmea)
        #expect(track.name == "drive.nmea")
        #expect(track.skippedLineCount == 2)
        #expect(track.fixes.map(\.timestamp) == [0.0, 1, 2].map { utc(march15, 12, 0, $0) })
        #expect(track.fixes.allSatisfy { $0.provider == .replay && $0.isSimulated })
        #expect(track.fixes[1].description == "NMEA GGA+RMC")
    }

    @Test func datesNMEAWithoutRMCOnTheFirstOfJanuary1970() throws {
        let track = try Track.parse(
            text: [NMEAFixture.gga("235959"), NMEAFixture.gga("000000")].joined(separator: "\n"), fileName: "g")
        #expect(track.fixes.map(\.timestamp.microseconds) == [86_399_000_000, 86_400_000_000])
    }

    @Test func prefersTrackPointsThenRoutePointsThenWaypoints() throws {
        let all =
            "<gpx><wpt lat='1' lon='0'/><rte><rtept lat='2' lon='0'/></rte><trk><trkseg><trkpt lat='3' lon='0'/></trkseg></trk></gpx>"
        #expect(try Track.parse(text: all, fileName: "a").fixes.map(\.latitude) == [3])
        let noTrack = "<gpx><wpt lat='1' lon='0'/><rte><rtept lat='2' lon='0'/></rte></gpx>"
        #expect(try Track.parse(text: noTrack, fileName: "a").fixes.map(\.latitude) == [2])
        let waypoints = "<gpx><wpt lat='1' lon='0'/><wpt lat='1.5' lon='0'/></gpx>"
        #expect(try Track.parse(text: waypoints, fileName: "a").fixes.map(\.latitude) == [1, 1.5])
    }

    @Test func spacesUntimedGPXPointsOneSecondApart() throws {
        let untimed = "<gpx><wpt lat='1' lon='0'/><wpt lat='2' lon='0'/><wpt lat='3' lon='0'/></gpx>"
        #expect(
            try Track.parse(text: untimed, fileName: "a").fixes.map(\.timestamp.microseconds) == [
                0, 1_000_000, 2_000_000,
            ])
        let mixed = """
            <gpx><wpt lat='1' lon='0'/><wpt lat='2' lon='0'/><wpt lat='3' lon='0'><time>2024-03-15T12:00:00Z</time></wpt>
            <wpt lat='4' lon='0'/><wpt lat='5' lon='0'><time>2024-03-15T12:00:10Z</time></wpt></gpx>
            """
        let times = try Track.parse(text: mixed, fileName: "a").fixes.map(\.timestamp)
        #expect(times == [-2.0, -1, 0, 1, 10].map { utc(march15, 12, 0, 0).advanced(by: .seconds($0)) })
    }

    @Test func dropsFixesThatGoBackInTime() throws {
        let track = try Track(
            name: "t", format: .gpx,
            fixes: [
                trackFix(0, 0, at: 0), trackFix(0, 0.001, at: 2), trackFix(0, 0.002, at: 1), trackFix(0, 0.003, at: 2),
                trackFix(0, 0.004, at: 3),
            ])
        #expect(track.fixes.map(\.longitude) == [0, 0.001, 0.004])
        #expect(track.droppedFixCount == 2)
    }

    @Test func derivesSpeedAndCourseFromNeighbours() throws {
        // 0.001° of latitude is about 111 m; of longitude at the equator, the same.
        let track = try Track(
            name: "t", format: .gpx,
            fixes: [
                trackFix(0, 0, at: 0), trackFix(0.001, 0, at: 10), trackFix(0.001, 0.001, at: 20, speed: 3, course: 45),
                trackFix(0.001, 0.001, at: 30),
            ])
        let metres = greatCircleDistance(0, 0, 0.001, 0)
        #expect(abs(try #require(track.fixes[0].speed) - metres / 10) < 1e-9)
        #expect(abs(try #require(track.fixes[0].course)) < 1e-9)
        #expect(abs(try #require(track.fixes[1].speed) - metres / 10) < 1e-9)
        #expect(abs(try #require(track.fixes[1].course)) < 1e-9)
        #expect(track.fixes[2].speed == 3)
        #expect(track.fixes[2].course == 45)
        #expect(track.fixes[3].speed == 0)
        #expect(track.fixes[3].course == nil)

        let westward = try Track(name: "t", format: .gpx, fixes: [trackFix(10, 0, at: 0), trackFix(10, -0.01, at: 1)])
        #expect(abs(try #require(westward.fixes[1].course) - 270) < 0.01)
        let southward = try Track(name: "t", format: .gpx, fixes: [trackFix(10, 0, at: 0), trackFix(9.99, 0, at: 1)])
        #expect(abs(try #require(southward.fixes[0].course) - 180) < 1e-6)

        let single = try Track(name: "t", format: .gpx, fixes: [trackFix(1, 1, at: 0)])
        #expect(single.fixes[0].speed == nil && single.fixes[0].course == nil)
    }

    @Test func reportsUnplayableInput() {
        #expect(trackError("", fileName: "e") == .unrecognizedFormat(fileName: "e"))
        #expect(trackError("lat,lon\n1,2\n") == .unrecognizedFormat(fileName: "t"))
        #expect(trackError("   x$GPGGA") == .unrecognizedFormat(fileName: "t"))
        #expect(trackError("<gpx></gpx>") == .noPoints(fileName: "t"))
        #expect(trackError("<gpx><trk/></gpx>") == .noPoints(fileName: "t"))
        #expect(
            trackError("<gpx>\n<wpt lat='95' lon='0'/></gpx>")
                == .gpx(fileName: "t", GPXError(line: 2, reason: .invalidValue(field: "lat", value: "95"))))
        #expect(
            trackError("#c\n$GPGGA*00\n")
                == .noValidFixes(fileName: "t", firstBadLine: 2, error: .checksumMismatch(stated: 0, computed: 0x56)))
        #expect(
            trackError(NMEAFixture.gga("120000", quality: 0) + "\n")
                == .noValidFixes(fileName: "t", firstBadLine: nil, error: nil))
        #expect(throws: TrackError.noPoints(fileName: "x")) { try Track(name: "x", format: .nmea, fixes: []) }
    }

    @Test func describesErrors() {
        #expect(
            TrackError.noValidFixes(fileName: "a.nmea", firstBadLine: 3, error: .missingChecksum).description
                == "a.nmea: no valid fix; first bad line 3: no '*' checksum")
        #expect(
            TrackError.gpx(fileName: "a.gpx", GPXError(line: 2, reason: .notGPX(rootElement: "kml"))).description
                == "a.gpx: line 2: root element is <kml>, not <gpx>")
        #expect(TrackError.invalidSpeed(0).description == "playback speed 0.0 is not a number above zero")
    }
}
