import TestBasics
import Testing
import WhereaboutsCore

/// A position answer, for recording lookups.
private let answer = IchnaeaOutcome.position(latitude: 48, longitude: 11, accuracy: 30)

/// A Wi-Fi source driven scan by scan: each scan is selected, and looked up (answered with `outcome`) when the
/// throttle asks for it.
private final class ThrottledSource {
    var throttle = QueryThrottle()
    let selection = AccessPointSelection()
    var outcome = answer
    /// The scans that were looked up, by index.
    var lookups: [Int] = []
    var scans = 0

    /// Offers a scan made `seconds` after the start; true when it was looked up.
    init() {}

    @discardableResult
    func offer(_ scan: [AccessPoint], at seconds: Double) -> Bool {
        defer { scans += 1 }
        let usable = selection.usable(scan)
        let now = WiFiFixtures.monotonic(seconds)
        guard throttle.needsLookup(usable, now: now) else { return false }
        throttle.looked(up: usable, outcome: outcome, now: now)
        lookups.append(scans)
        return true
    }
}

/// A throttle the tests call through, so that its mutating calls can stand inside `#expect`.
private final class ThrottleUnderTest {
    var rule = QueryThrottle()

    var lastComparison: ScanSimilarity? { rule.lastComparison }

    func needsLookup(_ usable: [AccessPoint], now: MonotonicTime) -> Bool { rule.needsLookup(usable, now: now) }

    func looked(up usable: [AccessPoint], outcome: IchnaeaOutcome, now: MonotonicTime) {
        rule.looked(up: usable, outcome: outcome, now: now)
    }

    func reset() { rule.reset() }
}

@Suite("Query throttle")
struct QueryThrottleTests {
    static let home = WiFiFixtures.scan([1: -45, 2: -55, 3: -62, 4: -70, 5: -78, 6: -86, 7: -92])

    @Test func theFirstUsableScanIsLookedUpAndTheSameScanIsNot() {
        let throttle = ThrottleUnderTest()
        #expect(throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(0)))
        #expect(throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(10)), "no answer yet: still needed")
        throttle.looked(up: Self.home, outcome: answer, now: WiFiFixtures.monotonic(10))
        for second in stride(from: 20.0, through: 86_400, by: 3_600) {
            #expect(!throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(second)))
        }
        #expect(throttle.lastComparison?.similarity == 1)
    }

    @Test func fewerThanTwoAccessPointsAreNeverLookedUp() {
        let throttle = ThrottleUnderTest()
        #expect(!throttle.needsLookup([], now: WiFiFixtures.monotonic(0)))
        #expect(!throttle.needsLookup([WiFiFixtures.accessPoint(1, -40)], now: WiFiFixtures.monotonic(0)))
        #expect(
            !throttle.needsLookup(
                [WiFiFixtures.accessPoint(1, -40), WiFiFixtures.accessPoint(1, -50)], now: WiFiFixtures.monotonic(0)))
        throttle.looked(up: Self.home, outcome: answer, now: WiFiFixtures.monotonic(0))
        #expect(!throttle.needsLookup([WiFiFixtures.accessPoint(99, -40)], now: WiFiFixtures.monotonic(10)))
    }

    @Test func anHourSittingStillCostsOneLookup() {
        // Scans every 10 s for an hour; signals jitter by ±8 dB, weak access points come and go, and the
        // selection keeps the 16 strongest of 20. Ten different random hours.
        for seed in UInt64(1)...10 {
            var generator = SplitMix64(seed: seed)
            let flat = SimulatedPlace.flat(base: 100)
            let source = ThrottledSource()
            var lowest = 1.0
            for scan in 0..<360 {
                source.offer(flat.scan(using: &generator), at: Double(scan) * 10)
                lowest = min(lowest, source.throttle.lastComparison?.similarity ?? 1)
            }
            #expect(source.lookups == [0], "seed \(seed)")
            #expect(lowest >= 0.6, "seed \(seed): lowest similarity \(lowest)")
        }
    }

    @Test func aDenseBuildingSittingStillCostsOneLookup() {
        // 40 access points, most of them medium: the selection's cut at 16 falls among anchors, which then come
        // and go as their signals jitter.
        for seed in UInt64(11)...20 {
            var generator = SplitMix64(seed: seed)
            let transmitters = (0..<40).map { index in
                SimulatedPlace.Transmitter(number: 500 + index, meanSignal: -50 - index, presence: index < 25 ? 1 : 0.5)
            }
            let building = SimulatedPlace(transmitters: transmitters)
            let source = ThrottledSource()
            for scan in 0..<360 { source.offer(building.scan(using: &generator), at: Double(scan) * 10) }
            #expect(source.lookups == [0], "seed \(seed)")
        }
    }

    @Test func movingToAnotherPlaceCostsExactlyOneLookup() {
        // Half an hour at home, then half an hour at work, where the strong access points are others; one strong
        // and two weak ones are heard in both places (the same chain's access points, a neighbour's).
        for seed in UInt64(21)...30 {
            var generator = SplitMix64(seed: seed)
            let home = SimulatedPlace.flat(base: 100)
            var work = SimulatedPlace.flat(base: 200)
            work.transmitters[0].number = 100
            work.transmitters[10].number = 110
            work.transmitters[11].number = 111
            let source = ThrottledSource()
            for scan in 0..<180 { source.offer(home.scan(using: &generator), at: Double(scan) * 10) }
            for scan in 180..<360 { source.offer(work.scan(using: &generator), at: Double(scan) * 10) }
            #expect(source.lookups == [0, 181], "seed \(seed): the second scan at work, and no other")
        }
    }

    @Test func aCompleteChangeIsLookedUpAtOnce() {
        let source = ThrottledSource()
        source.offer(Self.home, at: 0)
        #expect(source.offer(WiFiFixtures.scan([201: -50, 202: -60, 203: -70]), at: 10))
        #expect(!source.offer(WiFiFixtures.scan([201: -52, 202: -58, 203: -75, 204: -90]), at: 20))
        #expect(source.lookups == [0, 1])
    }

    @Test func oneOddScanIsNotAMove() {
        let source = ThrottledSource()
        source.offer(Self.home, at: 0)
        // A scan that hears home's strongest access point and many strangers (a bus full of hotspots passing).
        let odd = WiFiFixtures.scan([1: -60, 301: -40, 302: -45, 303: -50, 304: -55, 305: -60, 306: -65])
        #expect(!source.offer(odd, at: 10))
        #expect(source.throttle.lastComparison.map { $0.similarity < QueryThrottle.changedBelow } == true)
        #expect(!source.offer(Self.home, at: 20))
        #expect(!source.offer(odd, at: 30), "the count starts again")
        #expect(source.offer(odd, at: 40), "two in a row are a move")
    }

    @Test func notFoundIsAskedAgainOnlyAfterTenMinutes() {
        let throttle = ThrottleUnderTest()
        #expect(throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(0)))
        throttle.looked(up: Self.home, outcome: .notFound, now: WiFiFixtures.monotonic(0))
        #expect(!throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(10)))
        #expect(!throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(599.9)))
        #expect(throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(600)))
        // Until answered, it stays needed; a second not-found waits another ten minutes.
        #expect(throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(610)))
        throttle.looked(up: Self.home, outcome: .notFound, now: WiFiFixtures.monotonic(610))
        #expect(!throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(1_209)))
        #expect(throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(1_210)))
        // A position ends the retries.
        throttle.looked(up: Self.home, outcome: answer, now: WiFiFixtures.monotonic(1_210))
        #expect(!throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(100_000)))
    }

    @Test func anHourSittingStillWhereTheServiceKnowsNothingCostsSevenLookups() {
        var generator = SplitMix64(seed: 99)
        let flat = SimulatedPlace.flat(base: 100)
        let source = ThrottledSource()
        source.outcome = .notFound
        for scan in 0...360 { source.offer(flat.scan(using: &generator), at: Double(scan) * 10) }
        #expect(source.lookups == [0, 60, 120, 180, 240, 300, 360])
    }

    @Test func failuresAreNoAnswer() {
        let throttle = ThrottleUnderTest()
        let failures: [IchnaeaOutcome] = [
            .serverTrouble(status: 503, message: ""), .refused(status: 403, message: "key"), .malformed("portal"),
        ]
        for (index, failure) in failures.enumerated() {
            #expect(throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(Double(index))))
            throttle.looked(up: Self.home, outcome: failure, now: WiFiFixtures.monotonic(Double(index)))
        }
        #expect(throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(10)))
        throttle.looked(up: Self.home, outcome: answer, now: WiFiFixtures.monotonic(10))
        let work = WiFiFixtures.scan([201: -50, 202: -60, 203: -70, 1: -85])
        #expect(!throttle.needsLookup(work, now: WiFiFixtures.monotonic(20)))
        #expect(throttle.needsLookup(work, now: WiFiFixtures.monotonic(30)))
        throttle.looked(up: work, outcome: .serverTrouble(status: 500, message: ""), now: WiFiFixtures.monotonic(30))
        #expect(throttle.needsLookup(work, now: WiFiFixtures.monotonic(40)), "still needed after the failure")
    }

    @Test func walkingLooksUpAsThePlaceChangesButNeverTwiceInARow() {
        // A street with an access point every 20 m; the signal falls by 0.6 dB a metre from −35 dBm and is
        // heard down to −95 dBm (100 m). Walking at 1.4 m/s, a scan every 10 s, for 2 km.
        var generator = SplitMix64(seed: 7)
        let source = ThrottledSource()
        for scan in 0..<143 {
            let position = Double(scan) * 14
            var heard: [Int: Int] = [:]
            for index in 0..<110 {
                let distance = abs(position - Double(index) * 20)
                let jitter = Int(generator.next() % 9) - 4
                let signal = -35 - Int(distance * 0.6) + jitter
                if signal >= -95 { heard[index + 1] = signal }
            }
            source.offer(WiFiFixtures.scan(heard), at: Double(scan) * 10)
        }
        #expect(source.lookups.count >= 10, "\(source.lookups)")
        #expect(source.lookups.count <= 72, "\(source.lookups)")
        #expect(zip(source.lookups, source.lookups.dropFirst()).allSatisfy { $1 - $0 >= 2 }, "\(source.lookups)")
    }

    @Test func resetForgetsTheAnswer() {
        let throttle = ThrottleUnderTest()
        throttle.looked(up: Self.home, outcome: answer, now: WiFiFixtures.monotonic(0))
        #expect(!throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(10)))
        throttle.reset()
        #expect(throttle.lastComparison == nil)
        #expect(throttle.needsLookup(Self.home, now: WiFiFixtures.monotonic(20)))
    }
}
