import Testing
import WhereaboutsCore
import WhereaboutsProviders

@Suite("Replay schedule")
struct TrackReplayScheduleTests {
    /// Four points, 0 s, 1 s, 3 s and 6 s into the recording, moving east.
    static func track() throws -> Track {
        try Track(
            name: "walk.gpx", format: .gpx,
            fixes: [
                trackFix(0, 0, at: 0), trackFix(0, 0.0001, at: 1), trackFix(0, 0.0002, at: 3),
                trackFix(0, 0.0003, at: 6, speed: 2),
            ])
    }

    static let playbackStart = WallTime(microseconds: 1_800_000_000_000_000)

    @Test func keepsTheRecordedGapsAtRealTime() throws {
        let schedule = try ReplaySchedule(track: Self.track(), speed: 1)
        #expect((0..<4).map { schedule.offset(at: $0, loop: 0) } == [.zero, .seconds(1), .seconds(3), .seconds(6)])
        #expect(schedule.loopDuration == .seconds(7))
        #expect(schedule.offset(at: 0, loop: 1) == .seconds(7))
        #expect(schedule.offset(at: 2, loop: 3) == .seconds(24))
    }

    @Test func dividesTheGapsBySpeed() throws {
        let schedule = try ReplaySchedule(track: Self.track(), speed: 10)
        #expect(
            (0..<4).map { schedule.offset(at: $0, loop: 0) } == [
                .zero, .milliseconds(100), .milliseconds(300), .milliseconds(600),
            ])
        #expect(schedule.loopDuration == .milliseconds(700))
        #expect(schedule.offset(at: 1, loop: 2) == .milliseconds(1500))
        let slow = try ReplaySchedule(track: Self.track(), speed: 0.5)
        #expect(slow.offset(at: 3, loop: 0) == .seconds(12))
        #expect(slow.loopDuration == .seconds(14))
    }

    @Test func deliversSimulatedFixesAtPlaybackTime() throws {
        let schedule = try ReplaySchedule(track: Self.track(), speed: 10)
        let fix = schedule.fix(at: 3, loop: 1, startedAt: Self.playbackStart)
        #expect(fix.timestamp == Self.playbackStart.advanced(by: .milliseconds(1300)))
        #expect(fix.isSimulated)
        #expect(fix.provider == .replay)
        #expect(fix.description == "Replay of walk.gpx")
        #expect(fix.speed == 20)
        #expect(fix.latitude == 0 && fix.longitude == 0.0003)
        #expect(fix.horizontalAccuracy == 5)
    }

    @Test func loopingTimestampsIncreaseMonotonically() throws {
        for speed in [1.0, 10, 0.25, 1e9] {
            let schedule = try ReplaySchedule(track: Self.track(), speed: speed)
            var previous: WallTime?
            for loop in 0..<5 {
                for index in 0..<4 {
                    let timestamp = schedule.fix(at: index, loop: loop, startedAt: Self.playbackStart).timestamp
                    if let previous { #expect(timestamp > previous) }
                    previous = timestamp
                }
            }
        }
    }

    @Test func keepsOffsetsStrictlyIncreasingWhenRoundingWouldMergeThem() throws {
        let dense = try Track(name: "d", format: .nmea, fixes: (0..<5).map { trackFix(0, 0, at: Double($0) * 0.001) })
        let schedule = try ReplaySchedule(track: dense, speed: 1e6)
        #expect((0..<5).map { schedule.offset(at: $0, loop: 0).wholeMicroseconds } == [0, 1, 2, 3, 4])
        #expect(schedule.loopDuration == .microseconds(5))
    }

    @Test func playsASinglePointOncePerSecond() throws {
        let schedule = try ReplaySchedule(track: Track(name: "here", format: .gpx, fixes: [trackFix(1, 2, at: 0)]))
        #expect(schedule.loopDuration == .seconds(1))
        #expect(
            schedule.fix(at: 0, loop: 3, startedAt: Self.playbackStart).timestamp
                == Self.playbackStart.advanced(by: .seconds(3)))
        #expect(schedule.latestDue(at: .milliseconds(2500)) == (0, 2))
    }

    @Test func findsThePointDueAtAnyElapsedTime() throws {
        let schedule = try ReplaySchedule(track: Self.track(), speed: 1)
        #expect(schedule.latestDue(at: .seconds(-5)) == (0, 0))
        #expect(schedule.latestDue(at: .zero) == (0, 0))
        #expect(schedule.latestDue(at: .milliseconds(999)) == (0, 0))
        #expect(schedule.latestDue(at: .seconds(1)) == (1, 0))
        #expect(schedule.latestDue(at: .milliseconds(5999)) == (2, 0))
        #expect(schedule.latestDue(at: .milliseconds(6999)) == (3, 0))
        #expect(schedule.latestDue(at: .seconds(7)) == (0, 1))
        #expect(schedule.latestDue(at: .seconds(7 * 1000 + 3)) == (2, 1000))
    }

    @Test func rejectsUnusableSpeeds() throws {
        let track = try Self.track()
        for speed: Double in [0, -1, .infinity, -.infinity, .nan] {
            #expect(throws: TrackError.self) { try ReplaySchedule(track: track, speed: speed) }
        }
        #expect(throws: TrackError.playbackTooLong(fileName: "walk.gpx", speed: 1e-12)) {
            try ReplaySchedule(track: track, speed: 1e-12)
        }
    }

    @Test func saturatesInsteadOfOverflowing() throws {
        let schedule = try ReplaySchedule(track: Self.track(), speed: 1)
        #expect(schedule.offset(at: 1, loop: .max).wholeMicroseconds == .max / 1_000)
        #expect(schedule.offset(at: 1, loop: Int.max / 7_000_000).wholeMicroseconds == .max / 1_000)
    }

    @Test func playsAParsedRecordingEndToEnd() throws {
        let lines = (0..<3).flatMap { second in [NMEAFixture.gga("12000\(second)"), NMEAFixture.rmc("12000\(second)")] }
        let track = try Track.parse(text: lines.joined(separator: "\n"), fileName: "drive.nmea")
        let schedule = try ReplaySchedule(track: track, speed: 2)
        let fixes = (0..<2).flatMap { loop in
            (0..<3).map { schedule.fix(at: $0, loop: loop, startedAt: Self.playbackStart) }
        }
        let offsets = fixes.map { $0.timestamp.since(Self.playbackStart) }
        #expect(offsets == [0, 500, 1000, 1500, 2000, 2500].map { Duration.milliseconds($0) })
        #expect(fixes.allSatisfy { $0.description == "Replay of drive.nmea" && $0.isSimulated })
        let expectedSpeed: Double = 2 * 10 * 1852 / 3600
        #expect(abs(try #require(fixes[0].speed) - expectedSpeed) < 1e-9)
    }
}
