import TestBasics
import Testing
import WhereaboutsCore

/// A day, in seconds.
private let day = 86_400.0

/// The cell `cellID` of network 262-1 in area 4660 on `radio`.
private func cell(_ cellID: Int, _ radio: CellRadio = .lte, area: Int = 4660) throws -> ServingCell {
    try ServingCell(radio: radio, mobileCountryCode: 262, mobileNetworkCode: 1, areaCode: area, cellID: cellID)
}

/// The LTE cells `numbers` of network 262-1 in area 4660.
private func cells(_ numbers: ClosedRange<Int>) throws -> [ServingCell] {
    try numbers.map { try cell($0) }
}

/// The error parsing `text` throws, or nil when it parses.
private func formatError(_ text: String) -> CellAnswerCacheFormatError? {
    do {
        _ = try CellAnswerCache.parse(text, now: WiFiFixtures.wall())
        return nil
    } catch {
        return error
    }
}

/// A cache the tests call through, so that its mutating calls can stand inside `#expect`.
private final class CacheUnderTest {
    var cache: CellAnswerCache

    init(capacity: Int = CellAnswerCache.defaultCapacity) { cache = CellAnswerCache(capacity: capacity) }

    var entries: [CellAnswerCache.Entry] { cache.entries }
    var count: Int { cache.count }
    var capacity: Int { cache.capacity }

    func lookup(_ cells: [ServingCell], now: WallTime) -> CellAnswerCache.Entry? { cache.lookup(cells, now: now) }

    @discardableResult
    func store(latitude: Double, longitude: Double, accuracy: Double, for cells: [ServingCell], now: WallTime) -> Bool {
        cache.store(latitude: latitude, longitude: longitude, accuracy: accuracy, for: cells, now: now)
    }

    func prune(now: WallTime) { cache.prune(now: now) }
}

@Suite("Cell answer cache: lookups")
struct CellAnswerCacheLookupTests {
    @Test func anAnswerIsFoundForTheSameCellsInAnyOrder() throws {
        let cache = CacheUnderTest()
        let asked = [try cell(7), try cell(3, .gsm), try cell(5, .nr)]
        #expect(cache.lookup(asked, now: WiFiFixtures.wall()) == nil)
        #expect(cache.store(latitude: 48.1, longitude: 11.5, accuracy: 1200, for: asked, now: WiFiFixtures.wall()))
        let expected = CellAnswerCache.Entry(
            cells: [try cell(3, .gsm), try cell(7), try cell(5, .nr)], latitude: 48.1, longitude: 11.5,
            accuracy: 1200, stored: WiFiFixtures.wall())
        #expect(cache.lookup(asked, now: WiFiFixtures.wall(60)) == expected)
        #expect(cache.lookup(asked.reversed(), now: WiFiFixtures.wall(60)) == expected)
        #expect(cache.lookup(asked + [asked[0]], now: WiFiFixtures.wall(60)) == expected, "a cell named twice")
        #expect(cache.entries == [expected])
    }

    @Test func onlyTheSameSetHits() throws {
        let cache = CacheUnderTest()
        cache.store(latitude: 48.1, longitude: 11.5, accuracy: 1200, for: try cells(1...2), now: WiFiFixtures.wall())
        #expect(cache.lookup(try cells(1...1), now: WiFiFixtures.wall(1)) == nil)
        #expect(cache.lookup(try cells(1...3), now: WiFiFixtures.wall(1)) == nil)
        #expect(cache.lookup([], now: WiFiFixtures.wall(1)) == nil)
        // The same numbers on another radio, or in another area, are another cell.
        #expect(cache.lookup([try cell(1, .wcdma), try cell(2)], now: WiFiFixtures.wall(1)) == nil)
        #expect(cache.lookup([try cell(1, area: 4661), try cell(2)], now: WiFiFixtures.wall(1)) == nil)
        #expect(cache.lookup(try cells(1...2), now: WiFiFixtures.wall(1)) != nil)
    }

    @Test func theKeyOrdersByRadioThenEachNumber() throws {
        func make(_ radio: CellRadio, _ country: Int, _ network: Int, _ area: Int, _ cellID: Int) throws -> ServingCell
        {
            try ServingCell(
                radio: radio, mobileCountryCode: country, mobileNetworkCode: network, areaCode: area, cellID: cellID)
        }
        let ordered = [
            try make(.gsm, 799, 999, 65533, 65534), try make(.wcdma, 200, 0, 1, 1),
            try make(.lte, 200, 0, 1, 2), try make(.lte, 200, 0, 2, 1), try make(.lte, 200, 1, 1, 1),
            try make(.lte, 201, 0, 1, 1), try make(.nr, 200, 0, 1, 1),
        ]
        #expect(CellAnswerCache.key(ordered.reversed()) == ordered)
        #expect(CellAnswerCache.key(ordered.reversed() + ordered) == ordered)
        #expect(CellAnswerCache.key([]) == [])
    }

    @Test func aNewerAnswerForTheSameCellsReplacesTheOld() throws {
        let cache = CacheUnderTest()
        cache.store(latitude: 10, longitude: 10, accuracy: 4000, for: try cells(1...2), now: WiFiFixtures.wall())
        cache.store(latitude: 20, longitude: 20, accuracy: 3000, for: try cells(3...3), now: WiFiFixtures.wall(1))
        #expect(
            cache.store(
                latitude: 10.01, longitude: 10, accuracy: 2000, for: try cells(1...2).reversed(),
                now: WiFiFixtures.wall(60)))
        #expect(cache.count == 2)
        #expect(cache.entries.map(\.latitude) == [20, 10.01], "the replacement is the most recently used")
        let hit = try #require(cache.lookup(try cells(1...2), now: WiFiFixtures.wall(61)))
        #expect(hit.accuracy == 2000 && hit.stored == WiFiFixtures.wall(60))
    }

    @Test func invalidAnswersAreNotStored() throws {
        let cache = CacheUnderTest()
        let now = WiFiFixtures.wall()
        let two = try cells(1...2)
        #expect(!cache.store(latitude: .nan, longitude: 0, accuracy: 1000, for: two, now: now))
        #expect(!cache.store(latitude: 91, longitude: 0, accuracy: 1000, for: two, now: now))
        #expect(!cache.store(latitude: 0, longitude: -180.5, accuracy: 1000, for: two, now: now))
        #expect(!cache.store(latitude: 0, longitude: .infinity, accuracy: 1000, for: two, now: now))
        #expect(!cache.store(latitude: 0, longitude: 0, accuracy: 0, for: two, now: now))
        #expect(!cache.store(latitude: 0, longitude: 0, accuracy: -5, for: two, now: now))
        #expect(!cache.store(latitude: 0, longitude: 0, accuracy: .nan, for: two, now: now))
        #expect(!cache.store(latitude: 0, longitude: 0, accuracy: .infinity, for: two, now: now))
        #expect(!cache.store(latitude: 0, longitude: 0, accuracy: 500_000.5, for: two, now: now))
        #expect(!cache.store(latitude: 0, longitude: 0, accuracy: 1000, for: [], now: now))
        #expect(!cache.store(latitude: 0, longitude: 0, accuracy: 1000, for: try cells(1...9), now: now))
        #expect(cache.count == 0)
        // Eight distinct cells, one of them named twice, are eight.
        #expect(cache.store(latitude: 0, longitude: 0, accuracy: 1000, for: try cells(1...8) + two, now: now))
        #expect(cache.entries.map(\.cells) == [try cells(1...8)])
        #expect(cache.store(latitude: -90, longitude: 180, accuracy: 500_000, for: two, now: now))
        #expect(cache.count == 2)
        let none = CacheUnderTest(capacity: 0)
        #expect(!none.store(latitude: 0, longitude: 0, accuracy: 1000, for: two, now: now))
        #expect(none.count == 0)
        #expect(CellAnswerCache(capacity: -5).capacity == 0)
    }

    @Test func answersExpireAfterThirtyDays() throws {
        let cache = CacheUnderTest()
        cache.store(latitude: 1, longitude: 1, accuracy: 1000, for: try cells(1...1), now: WiFiFixtures.wall())
        #expect(cache.lookup(try cells(1...1), now: WiFiFixtures.wall(30 * day)) != nil)
        #expect(cache.lookup(try cells(1...1), now: WiFiFixtures.wall(30 * day + 1e-6)) == nil)
        cache.prune(now: WiFiFixtures.wall(30 * day))
        #expect(cache.count == 1)
        cache.prune(now: WiFiFixtures.wall(30 * day + 1e-6))
        #expect(cache.count == 0)
    }

    @Test func entriesFromTheFutureAreDropped() throws {
        let cache = CacheUnderTest()
        cache.store(latitude: 1, longitude: 1, accuracy: 1000, for: try cells(1...1), now: WiFiFixtures.wall(day))
        #expect(cache.lookup(try cells(1...1), now: WiFiFixtures.wall(0)) != nil, "a day ahead is tolerated")
        #expect(cache.lookup(try cells(1...1), now: WiFiFixtures.wall(-1e-6)) == nil)
        cache.prune(now: WiFiFixtures.wall(0))
        #expect(cache.count == 1)
        cache.prune(now: WiFiFixtures.wall(-1e-6))
        #expect(cache.count == 0)
    }

    @Test func theLeastRecentlyUsedEntryMakesRoom() throws {
        let cache = CacheUnderTest(capacity: 3)
        for place in 0..<3 {
            cache.store(
                latitude: Double(place), longitude: 0, accuracy: 1000, for: [try cell(place + 1)],
                now: WiFiFixtures.wall(Double(place)))
        }
        // Place 0 is used, so place 1 is now the least recently used.
        #expect(cache.lookup([try cell(1)], now: WiFiFixtures.wall(10)) != nil)
        cache.store(latitude: 3, longitude: 0, accuracy: 1000, for: [try cell(4)], now: WiFiFixtures.wall(11))
        #expect(cache.count == 3)
        #expect(cache.entries.map(\.latitude) == [2, 0, 3])
        #expect(cache.lookup([try cell(2)], now: WiFiFixtures.wall(12)) == nil)
        // Replacing an entry of a full cache drops nothing else.
        cache.store(latitude: 0.5, longitude: 0, accuracy: 1000, for: [try cell(1)], now: WiFiFixtures.wall(13))
        #expect(cache.entries.map(\.latitude) == [2, 3, 0.5])
        // Storing prunes the expired entries first rather than dropping a live one.
        cache.store(latitude: 4, longitude: 0, accuracy: 1000, for: [try cell(5)], now: WiFiFixtures.wall(31 * day))
        #expect(cache.entries.map(\.latitude) == [4])
    }

    @Test func fiveHundredAndTwelveEntriesByDefault() throws {
        let cache = CacheUnderTest()
        #expect(cache.capacity == 512)
        for place in 1...600 {
            cache.store(
                latitude: 0, longitude: 0, accuracy: 1000, for: [try cell(place)],
                now: WiFiFixtures.wall(Double(place)))
        }
        #expect(cache.count == 512)
        #expect(cache.entries.first?.stored == WiFiFixtures.wall(89))
    }
}

@Suite("Cell answer cache: the file")
struct CellAnswerCacheFileTests {
    static func sample() throws -> CellAnswerCache {
        var cache = CellAnswerCache()
        cache.store(
            latitude: 48.137154, longitude: 11.576124, accuracy: 1200, for: [try cell(26_383_617)],
            now: WiFiFixtures.wall())
        cache.store(
            latitude: -33.868820, longitude: 151.209296, accuracy: 35_000.5,
            for: [try cell(8_012_345, .wcdma, area: 1001), try cell(12_345, .gsm, area: 1001)],
            now: WiFiFixtures.wall(360))
        cache.store(
            latitude: 0.1, longitude: -0.000001, accuracy: 1e-3, for: [try cell(0xF_FFFF_FFFE, .nr, area: 0xFF_FFFD)],
            now: WiFiFixtures.wall(720))
        _ = cache.lookup([try cell(26_383_617)], now: WiFiFixtures.wall(800))
        return cache
    }

    @Test func theTextIsVersionedAndReadable() throws {
        #expect(
            try Self.sample().serialized()
                == """
                whereabouts-cell-cache 1
                1700000360000000 -33.86882 151.209296 35000.5 gsm:262:1:1001:12345 wcdma:262:1:1001:8012345
                1700000720000000 0.1 -1e-06 0.001 nr:262:1:16777213:68719476734
                1700000000000000 48.137154 11.576124 1200 lte:262:1:4660:26383617

                """)
    }

    @Test func aCacheRoundTrips() throws {
        let cache = try Self.sample()
        let read = try CellAnswerCache.parse(cache.serialized(), now: WiFiFixtures.wall(900))
        #expect(read.entries == cache.entries)
        #expect(read.serialized() == cache.serialized())
        // The order of use survives: the first line is the first to go.
        var small = try CellAnswerCache.parse(cache.serialized(), now: WiFiFixtures.wall(900), capacity: 3)
        small.store(latitude: 5, longitude: 5, accuracy: 5, for: [try cell(99)], now: WiFiFixtures.wall(901))
        #expect(small.entries.map(\.latitude) == [0.1, 48.137154, 5])
        #expect(
            try CellAnswerCache.parse(cache.serialized(), now: WiFiFixtures.wall(900), capacity: 1).entries.map(
                \.latitude) == [48.137154])
        #expect(try CellAnswerCache.parse(CellAnswerCache().serialized(), now: WiFiFixtures.wall()).count == 0)
        #expect(try CellAnswerCache.parse("whereabouts-cell-cache 1", now: WiFiFixtures.wall()).count == 0)
    }

    @Test func randomCachesRoundTripExactly() throws {
        var generator = SplitMix64(seed: 42)
        var cache = CellAnswerCache(capacity: 200)
        for index in 0..<300 {
            let latitude = Double(generator.next() % 180_000_001) / 1e6 - 90
            let longitude = Double(bitPattern: generator.next() >> 12 | 0x3FF0_0000_0000_0000) * 100 - 200
            let accuracy = Double(generator.next() % 500_000_000 + 1) / 1_000
            var asked: [ServingCell] = []
            for _ in 0...(generator.next() % 8) {
                let radio = CellRadio.allCases[Int(generator.next() % 4)]
                asked.append(
                    try ServingCell(
                        radio: radio, mobileCountryCode: 200 + Int(generator.next() % 600),
                        mobileNetworkCode: Int(generator.next() % 1000),
                        areaCode: 1 + Int(generator.next() % UInt64(radio.largestAreaCode - 2)),
                        cellID: 1 + Int(generator.next() % UInt64(radio.largestCellID - 1))))
            }
            let stored = cache.store(
                latitude: latitude, longitude: longitude, accuracy: accuracy, for: asked,
                now: WiFiFixtures.wall(Double(index)))
            #expect(stored)
        }
        #expect(cache.count == 200)
        let read = try CellAnswerCache.parse(cache.serialized(), now: WiFiFixtures.wall(300), capacity: 200)
        #expect(read.entries == cache.entries)
        #expect(
            zip(read.entries, cache.entries).allSatisfy {
                $0.latitude.bitPattern == $1.latitude.bitPattern && $0.longitude.bitPattern == $1.longitude.bitPattern
                    && $0.accuracy.bitPattern == $1.accuracy.bitPattern
            })
        #expect(read.serialized() == cache.serialized())
    }

    @Test func cellsAreReadInAnyOrderAndTheLaterLineForTheSameCellsWins() throws {
        let text = """
            whereabouts-cell-cache 1
            1700000000000000 1 1 1000 lte:262:1:4660:2 gsm:262:1:4660:1
            1700000001000000 3 3 1000 lte:262:1:4660:3
            1700000002000000 2 2 1000 gsm:262:1:4660:1 lte:262:1:4660:2

            """
        let read = try CellAnswerCache.parse(text, now: WiFiFixtures.wall(10))
        #expect(read.entries.map(\.latitude) == [3, 2])
        #expect(read.entries.last?.cells == [try cell(1, .gsm), try cell(2)])
        // In a full cache too, the later line replaces the earlier one, and the other entries stay.
        let full = try CellAnswerCache.parse(
            """
            whereabouts-cell-cache 1
            1700000000000000 1 1 1000 lte:262:1:4660:1
            1700000001000000 2 2 1000 lte:262:1:4660:2
            1700000002000000 3 3 1000 lte:262:1:4660:2

            """, now: WiFiFixtures.wall(10), capacity: 2)
        #expect(full.entries.map(\.latitude) == [1, 3])
    }

    @Test func expiredEntriesAreLeftOutWhenRead() throws {
        let text = try Self.sample().serialized()
        #expect(
            try CellAnswerCache.parse(text, now: WiFiFixtures.wall(30 * day + 400)).entries.map(\.latitude) == [
                0.1
            ])
        #expect(try CellAnswerCache.parse(text, now: WiFiFixtures.wall(-day - 1)).count == 0)
    }

    @Test func everyBadLineIsRefusedWithItsNumber() {
        let header = "whereabouts-cell-cache 1\n"
        let good = "1700000000000000 48.1 11.5 1200 lte:262:1:4660:26383617\n"
        let cases: [(String, CacheLineProblem<CellAnswerCacheEntryProblem>)] = [
            ("\n", .emptyLine),
            ("1700000000000000 48.1 11.5\n", .fieldCount(3)),
            ("1700000000000000 48.1 11.5 1200\n", .entry(.cellCount(0))),
            (
                "1700000000000000 48.1 11.5 1200 "
                    + (1...9).map { "lte:262:1:4660:\($0)" }.joined(separator: " ") + "\n",
                .entry(.cellCount(9))
            ),
            ("-1700000000000000 48.1 11.5 1200 lte:262:1:4660:1\n", .invalidTime("-1700000000000000")),
            ("+17 48.1 11.5 1200 lte:262:1:4660:1\n", .invalidTime("+17")),
            ("99999999999999999999 48.1 11.5 1200 lte:262:1:4660:1\n", .invalidTime("99999999999999999999")),
            ("1.5 48.1 11.5 1200 lte:262:1:4660:1\n", .invalidTime("1.5")),
            ("1700000000000000 90.5 11.5 1200 lte:262:1:4660:1\n", .invalidLatitude("90.5")),
            ("1700000000000000 nan 11.5 1200 lte:262:1:4660:1\n", .invalidLatitude("nan")),
            ("1700000000000000 0x1p3 11.5 1200 lte:262:1:4660:1\n", .invalidLatitude("0x1p3")),
            ("1700000000000000 48.1 inf 1200 lte:262:1:4660:1\n", .invalidLongitude("inf")),
            ("1700000000000000 48.1 -181 1200 lte:262:1:4660:1\n", .invalidLongitude("-181")),
            ("1700000000000000 48.1 1e999 1200 lte:262:1:4660:1\n", .invalidLongitude("1e999")),
            ("1700000000000000 48.1 11.5 0 lte:262:1:4660:1\n", .invalidAccuracy("0")),
            ("1700000000000000 48.1 11.5 -3 lte:262:1:4660:1\n", .invalidAccuracy("-3")),
            ("1700000000000000 48.1 11.5 5e5.1 lte:262:1:4660:1\n", .invalidAccuracy("5e5.1")),
            ("1700000000000000 48.1 11.5 500001 lte:262:1:4660:1\n", .invalidAccuracy("500001")),
            ("1700000000000000 48.1 11.5 1200 umts:262:1:4660:1\n", .entry(.invalidCell("umts:262:1:4660:1"))),
            ("1700000000000000 48.1 11.5 1200 LTE:262:1:4660:1\n", .entry(.invalidCell("LTE:262:1:4660:1"))),
            ("1700000000000000 48.1 11.5 1200 lte:262:1:4660\n", .entry(.invalidCell("lte:262:1:4660"))),
            ("1700000000000000 48.1 11.5 1200 lte:262:1:4660:1:2\n", .entry(.invalidCell("lte:262:1:4660:1:2"))),
            ("1700000000000000 48.1 11.5 1200 lte:262:1:0x1234:1\n", .entry(.invalidCell("lte:262:1:0x1234:1"))),
            ("1700000000000000 48.1 11.5 1200 lte:262:-1:4660:1\n", .entry(.invalidCell("lte:262:-1:4660:1"))),
            ("1700000000000000 48.1 11.5 1200 lte:262:+1:4660:1\n", .entry(.invalidCell("lte:262:+1:4660:1"))),
            ("1700000000000000 48.1 11.5 1200 lte:262::4660:1\n", .entry(.invalidCell("lte:262::4660:1"))),
            (
                "1700000000000000 48.1 11.5 1200 lte:262:1:4660:99999999999999999999\n",
                .entry(.invalidCell("lte:262:1:4660:99999999999999999999"))
            ),
            ("1700000000000000 48.1 11.5 1200 lte:262:1:4660:1  lte:262:1:4660:2\n", .entry(.invalidCell(""))),
            (
                "1700000000000000 48.1 11.5 1200 lte:901:1:4660:1\n",
                .entry(.refusedCell("lte:901:1:4660:1", .countryCodeNotGeographic(901)))
            ),
            (
                "1700000000000000 48.1 11.5 1200 lte:262:1000:4660:1\n",
                .entry(.refusedCell("lte:262:1000:4660:1", .malformedNetworkCode("1000")))
            ),
            (
                "1700000000000000 48.1 11.5 1200 lte:262:1:65535:1\n",
                .entry(.refusedCell("lte:262:1:65535:1", .unknownPlaceholder(.trackingAreaCode, 65535)))
            ),
            (
                "1700000000000000 48.1 11.5 1200 gsm:262:1:4660:65536\n",
                .entry(.refusedCell("gsm:262:1:4660:65536", .outOfRange(.cellID, 65536, .gsm)))
            ),
            (
                "1700000000000000 48.1 11.5 1200 wcdma:262:1:4660:0\n",
                .entry(.refusedCell("wcdma:262:1:4660:0", .unknownPlaceholder(.cellID, 0)))
            ),
            (
                "1700000000000000 48.1 11.5 1200 lte:262:1:4660:1 gsm:262:1:4660:1 lte:262:01:4660:1\n",
                .entry(.duplicateCell("lte:262:01:4660:1"))
            ),
            (
                "1700000000000000 48.1 11.5 1200 lte:262:1:4660:1\r\n",
                .entry(.invalidCell("lte:262:1:4660:1\r"))
            ),
        ]
        for (line, problem) in cases {
            #expect(
                formatError(header + good + good + line + good)
                    == CellAnswerCacheFormatError(line: 4, problem: problem),
                "\(line)")
        }
        #expect(formatError(header + good + good + good) == nil)
    }

    @Test func theHeaderMustNameTheFormatAndVersion() {
        let good = "1700000000000000 48.1 11.5 1200 lte:262:1:4660:26383617\n"
        #expect(formatError("") == CellAnswerCacheFormatError(line: 1, problem: .missingHeader))
        #expect(formatError(good) == CellAnswerCacheFormatError(line: 1, problem: .missingHeader))
        #expect(formatError("whereabouts-cell-cache\n") == CellAnswerCacheFormatError(line: 1, problem: .missingHeader))
        #expect(
            formatError("whereabouts-position-cache 1\n" + good)
                == CellAnswerCacheFormatError(line: 1, problem: .missingHeader))
        #expect(
            formatError("whereabouts-cell-cache 2\n" + good)
                == CellAnswerCacheFormatError(line: 1, problem: .unsupportedVersion("2")))
        #expect(
            formatError("whereabouts-cell-cache  1\n") == CellAnswerCacheFormatError(line: 1, problem: .missingHeader))
        #expect(
            formatError("whereabouts-cell-cache 1\r\n" + good)
                == CellAnswerCacheFormatError(line: 1, problem: .unsupportedVersion("1\r")))
        #expect(formatError("whereabouts-cell-cache 1\n\n") == CellAnswerCacheFormatError(line: 2, problem: .emptyLine))
        #expect(formatError("\u{0}\u{ff}garbage") == CellAnswerCacheFormatError(line: 1, problem: .missingHeader))
    }

    @Test func errorsSayWhere() {
        let error = CellAnswerCacheFormatError(line: 7, problem: .invalidLatitude("91"))
        #expect(error.description == "line 7: latitude '91' is not a number in -90...90")
        let long = CellAnswerCacheFormatError(
            line: 2, problem: .entry(.invalidCell(String(repeating: "x", count: 100))))
        #expect(
            long.description
                == "line 2: cell '\(String(repeating: "x", count: 40))…' is not RADIO:MCC:MNC:AREA:CELLID "
                + "(gsm, wcdma, lte or nr, decimal numbers)")
        let refused = CellAnswerCacheFormatError(
            line: 3, problem: .entry(.refusedCell("lte:901:1:4660:1", .countryCodeNotGeographic(901))))
        #expect(
            refused.description
                == "line 3: cell 'lte:901:1:4660:1' cannot be looked up: mobile country code 901 is not a country's "
                + "(200...799)")
    }
}
