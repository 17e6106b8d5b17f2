import TestBasics
import Testing
import WhereaboutsCore

/// A day, in seconds.
private let day = 86_400.0

/// The scan of access points `first...last`, the first at −45 dBm and each next one 5 dB weaker.
private func scan(_ numbers: ClosedRange<Int>) -> [AccessPoint] {
    numbers.enumerated().map { WiFiFixtures.accessPoint($0.element, -45 - 5 * $0.offset) }
}

/// The error parsing `text` throws, or nil when it parses.
private func formatError(_ text: String) -> PositionCacheFormatError? {
    do {
        _ = try PositionCache.parse(text, now: WiFiFixtures.wall())
        return nil
    } catch {
        return error
    }
}

/// A cache the tests call through, so that its mutating calls can stand inside `#expect`.
private final class CacheUnderTest {
    var cache: PositionCache

    init(capacity: Int = PositionCache.defaultCapacity) { cache = PositionCache(capacity: capacity) }

    var entries: [PositionCache.Entry] { cache.entries }
    var count: Int { cache.count }
    var capacity: Int { cache.capacity }

    func lookup(_ usable: [AccessPoint], now: WallTime) -> CachedPosition? { cache.lookup(usable, now: now) }

    @discardableResult
    func store(latitude: Double, longitude: Double, accuracy: Double, for usable: [AccessPoint], now: WallTime) -> Bool
    {
        cache.store(latitude: latitude, longitude: longitude, accuracy: accuracy, for: usable, now: now)
    }

    @discardableResult
    func learn(latitude: Double, longitude: Double, accuracy: Double, scan: [AccessPoint], now: WallTime) -> Bool {
        cache.learn(latitude: latitude, longitude: longitude, accuracy: accuracy, scan: scan, now: now)
    }

    func prune(now: WallTime) { cache.prune(now: now) }

    @discardableResult
    func forget(_ usable: [AccessPoint], latitude: Double, longitude: Double) -> Bool {
        cache.forget(usable, latitude: latitude, longitude: longitude)
    }
}

@Suite("Position cache: lookups")
struct PositionCacheLookupTests {
    @Test func anAnswerIsFoundForTheSameScan() throws {
        let cache = CacheUnderTest()
        #expect(cache.lookup(scan(1...8), now: WiFiFixtures.wall()) == nil)
        #expect(cache.store(latitude: 48.1, longitude: 11.5, accuracy: 35, for: scan(1...8), now: WiFiFixtures.wall()))
        let hit = try #require(cache.lookup(scan(1...8), now: WiFiFixtures.wall(60)))
        #expect(
            hit
                == CachedPosition(
                    latitude: 48.1, longitude: 11.5, accuracy: 35, origin: .network, stored: WiFiFixtures.wall(),
                    similarity: 1))
    }

    @Test func aJitteredScanMissingOneAccessPointHits() throws {
        let cache = CacheUnderTest()
        cache.store(latitude: 48.1, longitude: 11.5, accuracy: 35, for: scan(1...8), now: WiFiFixtures.wall())
        var generator = SplitMix64(seed: 3)
        for _ in 0..<200 {
            var jittered = scan(1...8).map { accessPoint in
                var moved = accessPoint
                moved.signal += Int(generator.next() % 17) - 8
                return moved
            }
            jittered.remove(at: Int(generator.next() % 8))
            let hit = try #require(cache.lookup(jittered, now: WiFiFixtures.wall(3_600)), "\(jittered.map(\.signal))")
            #expect(hit.latitude == 48.1 && hit.similarity >= 0.75)
        }
    }

    @Test func aDisjointScanMisses() {
        let cache = CacheUnderTest()
        cache.store(latitude: 48.1, longitude: 11.5, accuracy: 35, for: scan(1...8), now: WiFiFixtures.wall())
        #expect(cache.lookup(scan(11...18), now: WiFiFixtures.wall(1)) == nil)
    }

    @Test func aScanSharingOneAccessPointMisses() {
        let cache = CacheUnderTest()
        cache.store(latitude: 48.1, longitude: 11.5, accuracy: 35, for: scan(1...2), now: WiFiFixtures.wall())
        // Half of the anchors are shared, but only one access point: a neighbour's heard from two places.
        #expect(cache.lookup(scan(1...1) + [WiFiFixtures.accessPoint(20, -50)], now: WiFiFixtures.wall(1)) == nil)
        cache.store(latitude: 48.1, longitude: 11.5, accuracy: 35, for: scan(1...8), now: WiFiFixtures.wall())
        #expect(cache.lookup([WiFiFixtures.accessPoint(1, -45)] + scan(21...27), now: WiFiFixtures.wall(1)) == nil)
        // Two shared out of three anchors hit.
        #expect(cache.lookup(scan(1...2) + [WiFiFixtures.accessPoint(20, -50)], now: WiFiFixtures.wall(1)) != nil)
    }

    @Test func aMostlyDifferentScanMisses() {
        let cache = CacheUnderTest()
        cache.store(latitude: 48.1, longitude: 11.5, accuracy: 35, for: scan(1...8), now: WiFiFixtures.wall())
        // Three of eight shared, five new: 3 / 13 of the anchors.
        #expect(cache.lookup(scan(1...3) + scan(31...35), now: WiFiFixtures.wall(1)) == nil)
        // Five of eight shared and nothing new: 5 / 8.
        #expect(cache.lookup(scan(1...5), now: WiFiFixtures.wall(1))?.similarity == 5.0 / 8)
    }

    @Test func weakAccessPointsDoNotAnchor() throws {
        let cache = CacheUnderTest()
        let place = WiFiFixtures.scan([1: -50, 2: -60, 3: -70, 4: -80, 5: -88, 6: -90, 7: -92, 8: -95])
        cache.store(latitude: 1, longitude: 2, accuracy: 30, for: place, now: WiFiFixtures.wall())
        // The weak ones are all gone and others weak are heard: still the same place.
        let later = WiFiFixtures.scan([1: -52, 2: -58, 3: -74, 4: -84, 15: -87, 16: -93, 17: -99])
        #expect(try #require(cache.lookup(later, now: WiFiFixtures.wall(1))).similarity == 1)
    }

    @Test func theBestHitWins() throws {
        let cache = CacheUnderTest()
        cache.store(latitude: 10, longitude: 10, accuracy: 20, for: scan(1...6), now: WiFiFixtures.wall())
        cache.store(latitude: 20, longitude: 20, accuracy: 20, for: scan(3...8), now: WiFiFixtures.wall())
        // The more similar one.
        #expect(try #require(cache.lookup(scan(3...7), now: WiFiFixtures.wall(1))).latitude == 20)
        #expect(try #require(cache.lookup(scan(1...5), now: WiFiFixtures.wall(1))).latitude == 10)
        // At equal similarity, the more accurate one, then the newer one.
        let tie = CacheUnderTest()
        tie.store(latitude: 1, longitude: 1, accuracy: 50, for: scan(1...4), now: WiFiFixtures.wall())
        tie.learn(latitude: 2, longitude: 2, accuracy: 5, scan: scan(1...4), now: WiFiFixtures.wall(1))
        #expect(
            try #require(tie.lookup(scan(1...4), now: WiFiFixtures.wall(2))).latitude == 1,
            "50 m beats the learnt 100 m")
        tie.store(latitude: 3, longitude: 3, accuracy: 150, for: scan(11...14), now: WiFiFixtures.wall(3))
        tie.learn(latitude: 4, longitude: 4, accuracy: 30, scan: scan(11...14), now: WiFiFixtures.wall(4))
        #expect(try #require(tie.lookup(scan(11...14), now: WiFiFixtures.wall(5))).latitude == 4)
    }

    @Test func aNeighbouringPlaceKeepsItsOwnAnswer() {
        let cache = CacheUnderTest()
        cache.store(latitude: 10, longitude: 10, accuracy: 20, for: scan(1...6), now: WiFiFixtures.wall())
        cache.store(latitude: 20, longitude: 20, accuracy: 20, for: scan(3...8), now: WiFiFixtures.wall())
        #expect(cache.count == 2)
    }

    @Test func aDisputedAnswerIsForgottenAndOnlyIt() throws {
        let cache = CacheUnderTest()
        cache.store(latitude: 10, longitude: 10, accuracy: 20, for: scan(1...6), now: WiFiFixtures.wall())
        cache.learn(latitude: 20, longitude: 20, accuracy: 10, scan: scan(3...8), now: WiFiFixtures.wall())
        cache.store(latitude: 30, longitude: 30, accuracy: 20, for: scan(21...28), now: WiFiFixtures.wall())
        // Another position than the one the scan is answered with forgets nothing.
        #expect(!cache.forget(scan(1...6), latitude: 10, longitude: 10.5))
        #expect(cache.forget(scan(1...6), latitude: 10, longitude: 10))
        #expect(cache.count == 2)
        // A learned place that the scan hits goes the same way.
        #expect(try #require(cache.lookup(scan(1...6), now: WiFiFixtures.wall(1))).latitude == 20)
        #expect(cache.forget(scan(1...6), latitude: 20, longitude: 20))
        #expect(cache.lookup(scan(1...6), now: WiFiFixtures.wall(2)) == nil)
        #expect(cache.entries.map(\.latitude) == [30])
    }

    @Test func aNewerAnswerForTheSamePlaceReplacesTheOld() throws {
        let cache = CacheUnderTest()
        cache.store(latitude: 10, longitude: 10, accuracy: 40, for: scan(1...8), now: WiFiFixtures.wall())
        cache.store(latitude: 10.001, longitude: 10, accuracy: 30, for: scan(1...7), now: WiFiFixtures.wall(60))
        #expect(cache.count == 1)
        #expect(cache.entries[0].accessPoints.count == 7)
        #expect(try #require(cache.lookup(scan(1...8), now: WiFiFixtures.wall(61))).latitude == 10.001)
        cache.store(latitude: 30, longitude: 30, accuracy: 40, for: scan(21...28), now: WiFiFixtures.wall(62))
        #expect(cache.count == 2)
    }

    @Test func invalidAnswersAreNotStored() {
        let cache = CacheUnderTest()
        let now = WiFiFixtures.wall()
        #expect(!cache.store(latitude: .nan, longitude: 0, accuracy: 10, for: scan(1...3), now: now))
        #expect(!cache.store(latitude: 91, longitude: 0, accuracy: 10, for: scan(1...3), now: now))
        #expect(!cache.store(latitude: 0, longitude: -180.5, accuracy: 10, for: scan(1...3), now: now))
        #expect(!cache.store(latitude: 0, longitude: 0, accuracy: 0, for: scan(1...3), now: now))
        #expect(!cache.store(latitude: 0, longitude: 0, accuracy: .infinity, for: scan(1...3), now: now))
        #expect(!cache.store(latitude: 0, longitude: 0, accuracy: 10, for: scan(1...1), now: now))
        #expect(
            !cache.store(
                latitude: 0, longitude: 0, accuracy: 10,
                for: [WiFiFixtures.accessPoint(1, -50), WiFiFixtures.accessPoint(1, -40)], now: now))
        #expect(
            !cache.store(
                latitude: 0, longitude: 0, accuracy: 10,
                for: [WiFiFixtures.accessPoint(1, -50), WiFiFixtures.accessPoint(2, 0)], now: now))
        #expect(cache.count == 0)
        let none = CacheUnderTest(capacity: 0)
        #expect(!none.store(latitude: 0, longitude: 0, accuracy: 10, for: scan(1...3), now: now))
        #expect(PositionCache(capacity: -5).capacity == 0)
    }

    @Test func entriesKeepTheStrongestAccessPointsFirst() {
        let cache = CacheUnderTest()
        let many = (1...40).map { WiFiFixtures.accessPoint($0, -99 + $0) } + [WiFiFixtures.accessPoint(40, -95)]
        cache.store(latitude: 0, longitude: 0, accuracy: 10, for: many, now: WiFiFixtures.wall())
        let kept = cache.entries[0].accessPoints
        #expect(kept.count == PositionCache.maximumAccessPointsPerEntry)
        #expect(kept.first == AccessPointSighting(bssid: WiFiFixtures.bssid(40), signal: -59))
        #expect(kept.last?.signal == -90)
    }
}

@Suite("Position cache: learnt places")
struct PositionCacheLearningTests {
    @Test func onlyPreciseFixesAreLearnt() {
        let cache = CacheUnderTest()
        #expect(!cache.learn(latitude: 1, longitude: 2, accuracy: 50, scan: scan(1...4), now: WiFiFixtures.wall()))
        #expect(!cache.learn(latitude: 1, longitude: 2, accuracy: .nan, scan: scan(1...4), now: WiFiFixtures.wall()))
        #expect(!cache.learn(latitude: 1, longitude: 2, accuracy: -1, scan: scan(1...4), now: WiFiFixtures.wall()))
        #expect(
            !cache.learn(latitude: .infinity, longitude: 2, accuracy: 5, scan: scan(1...4), now: WiFiFixtures.wall()))
        #expect(!cache.learn(latitude: 1, longitude: 2, accuracy: 5, scan: scan(1...1), now: WiFiFixtures.wall()))
        #expect(cache.count == 0)
        #expect(cache.learn(latitude: 1, longitude: 2, accuracy: 49.9, scan: scan(1...4), now: WiFiFixtures.wall()))
        #expect(cache.entries.map(\.origin) == [.learned])
    }

    @Test func aLearntPlaceIsReportedWithWiFiRange() throws {
        let cache = CacheUnderTest()
        cache.learn(latitude: 1, longitude: 2, accuracy: 4, scan: scan(1...4), now: WiFiFixtures.wall())
        let hit = try #require(cache.lookup(scan(1...4), now: WiFiFixtures.wall(1)))
        #expect(hit.accuracy == 100 && hit.origin == .learned)
        #expect(cache.entries[0].accuracy == 4)
    }

    @Test func aBetterStoredFixIsKeptWhenTheNewOneAgrees() throws {
        let cache = CacheUnderTest()
        let metre = 1 / 111_195.0
        cache.learn(latitude: 1, longitude: 2, accuracy: 5, scan: scan(1...6), now: WiFiFixtures.wall())
        // 20 m away, within 5 m + 30 m: the same place measured worse. The access points and time are refreshed.
        cache.learn(
            latitude: 1 + 20 * metre, longitude: 2, accuracy: 30, scan: scan(1...5), now: WiFiFixtures.wall(100))
        #expect(cache.count == 1)
        #expect(cache.entries[0].latitude == 1 && cache.entries[0].accuracy == 5)
        #expect(cache.entries[0].stored == WiFiFixtures.wall(100) && cache.entries[0].accessPoints.count == 5)
        // 500 m away, with the same access points: another place (the walk went on, or they moved).
        cache.learn(
            latitude: 1 + 500 * metre, longitude: 2, accuracy: 30, scan: scan(1...6), now: WiFiFixtures.wall(200))
        #expect(cache.count == 2)
        #expect(cache.entries.map(\.latitude) == [1, 1 + 500 * metre])
        // A more accurate fix at that place replaces its position; the first place stays as it was.
        cache.learn(
            latitude: 1 + 501 * metre, longitude: 2, accuracy: 3, scan: scan(1...6), now: WiFiFixtures.wall(300))
        #expect(cache.entries.map(\.latitude) == [1, 1 + 501 * metre])
        #expect(cache.entries.map(\.accuracy) == [5, 3])
        // Of two places alike, the newer is found.
        #expect(try #require(cache.lookup(scan(1...6), now: WiFiFixtures.wall(301))).latitude == 1 + 501 * metre)
        // Learning never touches answers from the service.
        cache.store(latitude: 9, longitude: 9, accuracy: 40, for: scan(1...6), now: WiFiFixtures.wall(400))
        cache.learn(latitude: 1, longitude: 2, accuracy: 3, scan: scan(1...6), now: WiFiFixtures.wall(500))
        #expect(cache.entries.map(\.origin) == [.learned, .network, .learned])
    }

    @Test func sittingStillWithAReceiverKeepsOnePlace() {
        let cache = CacheUnderTest()
        var generator = SplitMix64(seed: 5)
        let metre = 1 / 111_195.0
        let flat = SimulatedPlace.flat(base: 100)
        let selection = AccessPointSelection()
        for second in stride(from: 0.0, to: 3_600, by: 10) {
            let wander = Double(generator.next() % 11) - 5
            cache.learn(
                latitude: 48 + wander * metre, longitude: 11, accuracy: 8 + Double(generator.next() % 10),
                scan: selection.usable(flat.scan(using: &generator)), now: WiFiFixtures.wall(second))
        }
        #expect(cache.count == 1)
    }
}

@Suite("Position cache: age and size")
struct PositionCacheBoundsTests {
    @Test func answersLastThirtyDaysAndLearntPlacesNinety() {
        let cache = CacheUnderTest()
        cache.store(latitude: 1, longitude: 1, accuracy: 30, for: scan(1...4), now: WiFiFixtures.wall())
        cache.learn(latitude: 2, longitude: 2, accuracy: 5, scan: scan(11...14), now: WiFiFixtures.wall())
        #expect(cache.lookup(scan(1...4), now: WiFiFixtures.wall(30 * day)) != nil)
        #expect(cache.lookup(scan(1...4), now: WiFiFixtures.wall(30 * day + 1)) == nil)
        #expect(cache.lookup(scan(11...14), now: WiFiFixtures.wall(90 * day)) != nil)
        #expect(cache.lookup(scan(11...14), now: WiFiFixtures.wall(90 * day + 1)) == nil)
        #expect(cache.count == 2, "lookups do not prune")
        cache.prune(now: WiFiFixtures.wall(31 * day))
        #expect(cache.entries.map(\.origin) == [.learned])
        cache.prune(now: WiFiFixtures.wall(91 * day))
        #expect(cache.count == 0)
    }

    @Test func entriesFromTheFutureAreDropped() {
        let cache = CacheUnderTest()
        cache.store(latitude: 1, longitude: 1, accuracy: 30, for: scan(1...4), now: WiFiFixtures.wall(day))
        #expect(cache.lookup(scan(1...4), now: WiFiFixtures.wall(0)) != nil, "a day ahead is tolerated")
        #expect(cache.lookup(scan(1...4), now: WiFiFixtures.wall(-1)) == nil)
        cache.prune(now: WiFiFixtures.wall(-1))
        #expect(cache.count == 0)
    }

    @Test func theLeastRecentlyUsedEntryMakesRoom() {
        let cache = CacheUnderTest(capacity: 3)
        for place in 0..<3 {
            cache.store(
                latitude: Double(place), longitude: 0, accuracy: 30, for: scan(place * 10 + 1...place * 10 + 4),
                now: WiFiFixtures.wall(Double(place)))
        }
        // Place 0 is used, so place 1 is now the least recently used.
        #expect(cache.lookup(scan(1...4), now: WiFiFixtures.wall(10)) != nil)
        cache.store(latitude: 3, longitude: 0, accuracy: 30, for: scan(31...34), now: WiFiFixtures.wall(11))
        #expect(cache.count == 3)
        #expect(cache.entries.map(\.latitude) == [2, 0, 3])
        #expect(cache.lookup(scan(11...14), now: WiFiFixtures.wall(12)) == nil)
        // Storing expired entries' places prunes them first rather than dropping a live one.
        cache.store(latitude: 4, longitude: 0, accuracy: 30, for: scan(41...44), now: WiFiFixtures.wall(31 * day))
        #expect(cache.entries.map(\.latitude) == [4])
    }

    @Test func twoThousandEntriesByDefault() {
        let cache = CacheUnderTest()
        #expect(cache.capacity == 2000)
        for place in 0..<2_100 {
            cache.store(
                latitude: 0, longitude: 0, accuracy: 30,
                for: [WiFiFixtures.accessPoint(place * 2, -50), WiFiFixtures.accessPoint(place * 2 + 1, -60)],
                now: WiFiFixtures.wall(Double(place)))
        }
        #expect(cache.count == 2_000)
        #expect(cache.entries.first?.stored == WiFiFixtures.wall(100))
    }
}

@Suite("Position cache: the file")
struct PositionCacheFileTests {
    static func sample() -> PositionCache {
        var cache = PositionCache()
        cache.store(latitude: 48.137154, longitude: 11.576124, accuracy: 35, for: scan(1...4), now: WiFiFixtures.wall())
        cache.learn(
            latitude: -33.868820, longitude: 151.209296, accuracy: 6.5, scan: scan(11...13), now: WiFiFixtures.wall(360)
        )
        cache.store(
            latitude: 0.1, longitude: -0.000001, accuracy: 1e-3, for: scan(21...22), now: WiFiFixtures.wall(720))
        _ = cache.lookup(scan(1...4), now: WiFiFixtures.wall(800))
        return cache
    }

    @Test func theTextIsVersionedAndReadable() {
        #expect(
            Self.sample().serialized()
                == """
                whereabouts-position-cache 1
                learned 1700000360000000 -33.86882 151.209296 6.5 00:1a:2b:00:00:0b=-45 00:1a:2b:00:00:0c=-50 00:1a:2b:00:00:0d=-55
                network 1700000720000000 0.1 -1e-06 0.001 00:1a:2b:00:00:15=-45 00:1a:2b:00:00:16=-50
                network 1700000000000000 48.137154 11.576124 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50 00:1a:2b:00:00:03=-55 00:1a:2b:00:00:04=-60

                """)
    }

    @Test func aCacheRoundTrips() throws {
        let cache = Self.sample()
        let read = try PositionCache.parse(cache.serialized(), now: WiFiFixtures.wall(900))
        #expect(read.entries == cache.entries)
        #expect(read.serialized() == cache.serialized())
        // The order of use survives: the first line is the first to go.
        var small = try PositionCache.parse(cache.serialized(), now: WiFiFixtures.wall(900), capacity: 3)
        small.store(latitude: 5, longitude: 5, accuracy: 5, for: scan(31...33), now: WiFiFixtures.wall(901))
        #expect(small.entries.map(\.latitude) == [0.1, 48.137154, 5])
        #expect(
            try PositionCache.parse(cache.serialized(), now: WiFiFixtures.wall(900), capacity: 1).entries.map(
                \.latitude) == [48.137154])
        #expect(try PositionCache.parse(PositionCache().serialized(), now: WiFiFixtures.wall()).count == 0)
        #expect(try PositionCache.parse("whereabouts-position-cache 1", now: WiFiFixtures.wall()).count == 0)
    }

    @Test func randomCachesRoundTrip() throws {
        var generator = SplitMix64(seed: 42)
        var cache = PositionCache(capacity: 200)
        for index in 0..<300 {
            let latitude = Double(generator.next() % 180_000_001) / 1e6 - 90
            let longitude = Double(bitPattern: generator.next() >> 12 | 0x3FF0_0000_0000_0000) * 100 - 200
            let count = 2 + Int(generator.next() % 20)
            let accessPoints = (0..<count).map {
                WiFiFixtures.accessPoint(index * 64 + $0, -10 - Int(generator.next() % 91))
            }
            if index % 3 == 0 {
                cache.learn(
                    latitude: latitude, longitude: longitude, accuracy: Double(generator.next() % 4999) / 100,
                    scan: accessPoints, now: WiFiFixtures.wall(Double(index)))
            } else {
                cache.store(
                    latitude: latitude, longitude: longitude, accuracy: Double(generator.next() % 100_000) / 7 + 0.5,
                    for: accessPoints, now: WiFiFixtures.wall(Double(index)))
            }
        }
        #expect(cache.count == 200)
        let read = try PositionCache.parse(cache.serialized(), now: WiFiFixtures.wall(300), capacity: 200)
        #expect(read.entries == cache.entries)
    }

    @Test func expiredEntriesAreLeftOutWhenRead() throws {
        let read = try PositionCache.parse(Self.sample().serialized(), now: WiFiFixtures.wall(31 * day))
        #expect(read.entries.map(\.origin) == [.learned])
    }

    @Test func everyBadLineIsRefusedWithItsNumber() {
        let header = "whereabouts-position-cache 1\n"
        let good = "network 1700000000000000 48.1 11.5 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n"
        let cases: [(String, CacheLineProblem<PositionCacheEntryProblem>)] = [
            ("network 1700000000000000 48.1 11.5 35\n", .entry(.accessPointCount(0))),
            ("network 1700000000000000 48.1 11.5 35 00:1a:2b:00:00:01=-45\n", .entry(.accessPointCount(1))),
            (
                "network 1700000000000000 48.1 11.5 35 "
                    + (1...33).map { "\(WiFiFixtures.bssid($0))=-50" }.joined(separator: " ") + "\n",
                .entry(.accessPointCount(33))
            ),
            ("network 1700000000000000 48.1 11.5\n", .fieldCount(4)),
            ("\n", .emptyLine),
            (
                "satellite 1700000000000000 48.1 11.5 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n",
                .entry(.unknownOrigin("satellite"))
            ),
            (
                "network -1700000000000000 48.1 11.5 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n",
                .invalidTime("-1700000000000000")
            ),
            ("network +17 48.1 11.5 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n", .invalidTime("+17")),
            (
                "network 99999999999999999999 48.1 11.5 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n",
                .invalidTime("99999999999999999999")
            ),
            (
                "network 1700000000000000 90.5 11.5 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n",
                .invalidLatitude("90.5")
            ),
            (
                "network 1700000000000000 nan 11.5 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n",
                .invalidLatitude("nan")
            ),
            (
                "network 1700000000000000 0x1p3 11.5 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n",
                .invalidLatitude("0x1p3")
            ),
            (
                "network 1700000000000000 48.1 inf 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n",
                .invalidLongitude("inf")
            ),
            (
                "network 1700000000000000 48.1 -181 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n",
                .invalidLongitude("-181")
            ),
            (
                "network 1700000000000000 48.1 1e999 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n",
                .invalidLongitude("1e999")
            ),
            (
                "network 1700000000000000 48.1 11.5 0 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n",
                .invalidAccuracy("0")
            ),
            (
                "network 1700000000000000 48.1 11.5 3e7 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n",
                .invalidAccuracy("3e7")
            ),
            (
                "learned 1700000000000000 48.1 11.5 50 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n",
                .invalidAccuracy("50")
            ),
            (
                "learned 1700000000000000 48.1 11.5 -1 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n",
                .invalidAccuracy("-1")
            ),
            (
                "network 1700000000000000 48.1 11.5 35 00:1A:2B:00:00:01=-45 00:1a:2b:00:00:02=-50\n",
                .entry(.invalidAccessPoint("00:1A:2B:00:00:01=-45"))
            ),
            (
                "network 1700000000000000 48.1 11.5 35 00-1a-2b-00-00-01=-45 00:1a:2b:00:00:02=-50\n",
                .entry(.invalidAccessPoint("00-1a-2b-00-00-01=-45"))
            ),
            (
                "network 1700000000000000 48.1 11.5 35 00:1a:2b:00:00:0g=-45 00:1a:2b:00:00:02=-50\n",
                .entry(.invalidAccessPoint("00:1a:2b:00:00:0g=-45"))
            ),
            (
                "network 1700000000000000 48.1 11.5 35 00:1a:2b:00:00:01=-101 00:1a:2b:00:00:02=-50\n",
                .entry(.invalidAccessPoint("00:1a:2b:00:00:01=-101"))
            ),
            (
                "network 1700000000000000 48.1 11.5 35 00:1a:2b:00:00:01=0 00:1a:2b:00:00:02=-50\n",
                .entry(.invalidAccessPoint("00:1a:2b:00:00:01=0"))
            ),
            (
                "network 1700000000000000 48.1 11.5 35 00:1a:2b:00:00:01 00:1a:2b:00:00:02=-50\n",
                .entry(.invalidAccessPoint("00:1a:2b:00:00:01"))
            ),
            (
                "network 1700000000000000 48.1 11.5 35 00:1a:2b:00:00:01=-45=-4 00:1a:2b:00:00:02=-50\n",
                .entry(.invalidAccessPoint("00:1a:2b:00:00:01=-45=-4"))
            ),
            (
                "network 1700000000000000 48.1 11.5 35 00:1a:2b:00:00:01=-45  00:1a:2b:00:00:02=-50\n",
                .entry(.invalidAccessPoint(""))
            ),
            (
                "network 1700000000000000 48.1 11.5 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:01=-50\n",
                .entry(.duplicateAccessPoint("00:1a:2b:00:00:01"))
            ),
            (
                "network 1700000000000000 48.1 11.5 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\r\n",
                .entry(.invalidAccessPoint("00:1a:2b:00:00:02=-50\r"))
            ),
        ]
        for (line, problem) in cases {
            #expect(
                formatError(header + good + good + line + good) == PositionCacheFormatError(line: 4, problem: problem),
                "\(line)")
        }
        #expect(formatError(header + good + good + good) == nil)
    }

    @Test func theHeaderMustNameTheFormatAndVersion() {
        let good = "network 1700000000000000 48.1 11.5 35 00:1a:2b:00:00:01=-45 00:1a:2b:00:00:02=-50\n"
        #expect(formatError("") == PositionCacheFormatError(line: 1, problem: .missingHeader))
        #expect(formatError(good) == PositionCacheFormatError(line: 1, problem: .missingHeader))
        #expect(
            formatError("whereabouts-position-cache\n") == PositionCacheFormatError(line: 1, problem: .missingHeader))
        #expect(
            formatError("whereabouts-position-cache 2\n" + good)
                == PositionCacheFormatError(line: 1, problem: .unsupportedVersion("2")))
        #expect(
            formatError("whereabouts-position-cache  1\n") == PositionCacheFormatError(line: 1, problem: .missingHeader)
        )
        #expect(
            formatError("whereabouts-position-cache 1\n\n") == PositionCacheFormatError(line: 2, problem: .emptyLine))
        #expect(formatError("\u{0}\u{ff}garbage") == PositionCacheFormatError(line: 1, problem: .missingHeader))
    }

    @Test func errorsSayWhere() {
        let error = PositionCacheFormatError(line: 7, problem: .invalidLatitude("91"))
        #expect(error.description == "line 7: latitude '91' is not a number in -90...90")
        let long = PositionCacheFormatError(
            line: 2, problem: .entry(.unknownOrigin(String(repeating: "x", count: 100))))
        #expect(
            long.description
                == "line 2: origin '\(String(repeating: "x", count: 40))…' is neither 'network' nor 'learned'")
    }
}
