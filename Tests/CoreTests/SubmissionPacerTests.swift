import Testing
import WhereaboutsCore

/// A gpsd fix measured `seconds` after the test's start.
private func satelliteFix(at seconds: Double = 0, accuracy: Double = 8, provider: ProviderKind = .gpsd) -> Fix {
    Fix(
        latitude: 48.137154, longitude: 11.576124, horizontalAccuracy: accuracy, altitude: 519, speed: 1.2,
        course: 90, timestamp: WiFiFixtures.wall(seconds), provider: provider, description: "test fix")
}

private let scanned = [
    WiFiFixtures.accessPoint(1, -50, age: .seconds(1)), WiFiFixtures.accessPoint(2, -60),
    WiFiFixtures.accessPoint(3, -70, ssid: [0xff]),
]

/// A pacer the tests call through, so that its mutating calls can stand inside `#expect`.
private final class PacerUnderTest {
    var rule = SubmissionPacer()

    func submission(for fix: Fix, scan usable: [AccessPoint], scannedAt: WallTime, now: MonotonicTime)
        -> SubmissionItem?
    {
        rule.submission(for: fix, scan: usable, scannedAt: scannedAt, now: now)
    }
}

@Suite("Submission pacing")
struct SubmissionPacerTests {
    @Test func aPreciseFixWithAScanIsSubmittedOnceAMinute() throws {
        let pacer = PacerUnderTest()
        let item = try #require(
            pacer.submission(
                for: satelliteFix(), scan: scanned, scannedAt: WiFiFixtures.wall(), now: WiFiFixtures.monotonic(0)))
        #expect(item.timestamp == WiFiFixtures.wall() && item.accuracy == 8 && item.altitude == 519)
        #expect(item.speed == 1.2 && item.heading == 90)
        #expect(item.submittableAccessPoints.count == 2)
        #expect(
            pacer.submission(
                for: satelliteFix(at: 59), scan: scanned, scannedAt: WiFiFixtures.wall(59),
                now: WiFiFixtures.monotonic(59.9)) == nil)
        #expect(
            pacer.submission(
                for: satelliteFix(at: 60), scan: scanned, scannedAt: WiFiFixtures.wall(60),
                now: WiFiFixtures.monotonic(60)) != nil)
    }

    @Test func accessPointAgesAreMadeRelativeToTheFix() throws {
        let pacer = PacerUnderTest()
        // The scan came 4 s before the fix: an access point last heard 1 s before the scan was heard 5 s before it.
        let item = try #require(
            pacer.submission(
                for: satelliteFix(at: 4), scan: scanned, scannedAt: WiFiFixtures.wall(), now: WiFiFixtures.monotonic(4))
        )
        #expect(item.accessPoints.map(\.age) == [.seconds(5), .seconds(4), .seconds(4)])
        let later = PacerUnderTest()
        let early = try #require(
            later.submission(
                for: satelliteFix(at: 0), scan: scanned, scannedAt: WiFiFixtures.wall(3), now: WiFiFixtures.monotonic(3)
            ))
        #expect(early.accessPoints.map(\.age) == [.seconds(-2), .seconds(-3), .seconds(-3)])
    }

    @Test func onlyMeasuredPreciseFixesCount() {
        let pacer = PacerUnderTest()
        let now = WiFiFixtures.monotonic(0)
        for provider in [ProviderKind.static, .replay, .wifi, .ip] {
            #expect(
                pacer.submission(
                    for: satelliteFix(provider: provider), scan: scanned, scannedAt: WiFiFixtures.wall(), now: now)
                    == nil, "\(provider)")
        }
        var simulated = satelliteFix()
        simulated.isSimulated = true
        #expect(pacer.submission(for: simulated, scan: scanned, scannedAt: WiFiFixtures.wall(), now: now) == nil)
        #expect(
            pacer.submission(
                for: satelliteFix(accuracy: 100.1), scan: scanned, scannedAt: WiFiFixtures.wall(), now: now) == nil)
        #expect(
            pacer.submission(for: satelliteFix(accuracy: .nan), scan: scanned, scannedAt: WiFiFixtures.wall(), now: now)
                == nil)
        var nowhere = satelliteFix()
        nowhere.latitude = .infinity
        #expect(pacer.submission(for: nowhere, scan: scanned, scannedAt: WiFiFixtures.wall(), now: now) == nil)
        // None of these used up the minute.
        #expect(
            pacer.submission(
                for: satelliteFix(accuracy: 100, provider: .nmea), scan: scanned, scannedAt: WiFiFixtures.wall(),
                now: now) != nil)
    }

    @Test func theScanMustHaveTwoSubmittableAccessPointsHeardWithTheFix() {
        let pacer = PacerUnderTest()
        let now = WiFiFixtures.monotonic(0)
        let oneNamed = [WiFiFixtures.accessPoint(1, -50), WiFiFixtures.accessPoint(2, -60, ssid: [0xc3])]
        #expect(pacer.submission(for: satelliteFix(), scan: oneNamed, scannedAt: WiFiFixtures.wall(), now: now) == nil)
        #expect(pacer.submission(for: satelliteFix(), scan: [], scannedAt: WiFiFixtures.wall(), now: now) == nil)
        #expect(
            pacer.submission(for: satelliteFix(at: 15.001), scan: scanned, scannedAt: WiFiFixtures.wall(), now: now)
                == nil)
        #expect(
            pacer.submission(for: satelliteFix(at: 0), scan: scanned, scannedAt: WiFiFixtures.wall(15.001), now: now)
                == nil)
        #expect(
            pacer.submission(for: satelliteFix(at: 15), scan: scanned, scannedAt: WiFiFixtures.wall(), now: now) != nil)
    }
}
