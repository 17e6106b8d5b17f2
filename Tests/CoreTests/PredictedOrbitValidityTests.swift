import Testing
import WhereaboutsCore

/// How long a downloaded predicted-orbit file is used: the HTTP answer's date, else 7 days, never more than 14, never
/// less than an hour.
@Suite("Predicted orbits: validity")
struct PredictedOrbitValidityTests {
    static let downloaded = WallTime(microseconds: 1_790_000_000_000_000)
    static let day = Duration.seconds(86_400)

    static func expiry(_ headers: [(String, String)]) -> Duration {
        PredictedOrbitValidity.expiry(downloaded: downloaded, headers: headers.map { HTTPHeader($0.0, $0.1) })
            .since(downloaded)
    }

    @Test func withoutADateAFileIsUsedForSevenDays() {
        #expect(Self.expiry([]) == Self.day * 7)
        #expect(Self.expiry([("Content-Type", "application/octet-stream")]) == Self.day * 7)
    }

    @Test func maxAgeSaysHowLong() {
        #expect(Self.expiry([("Cache-Control", "public, max-age=259200")]) == Self.day * 3)
        #expect(Self.expiry([("cache-control", "MAX-AGE = \"3600\"")]) == .seconds(3600))
    }

    @Test func theTimeAnAnswerSpentInCachesIsTakenOff() {
        #expect(Self.expiry([("Cache-Control", "max-age=259200"), ("Age", "86400")]) == Self.day * 2)
        #expect(Self.expiry([("Cache-Control", "max-age=259200"), ("Age", "later")]) == Self.day * 3)
        #expect(Self.expiry([("Cache-Control", "max-age=7200"), ("Age", "99999999999999999999")]) == .seconds(3600))
    }

    @Test func maxAgeComesBeforeExpires() {
        let headers = [
            ("Date", "Mon, 01 Sep 2026 10:00:00 GMT"), ("Expires", "Tue, 02 Sep 2026 10:00:00 GMT"),
            ("Cache-Control", "max-age=7200"),
        ]
        #expect(Self.expiry(headers) == .seconds(7200))
    }

    @Test func expiresCountsFromTheAnswersDateNotTheMachinesClock() {
        // The server's clock is a year off; only the difference counts.
        let headers = [("Date", "Thu, 01 Jan 2015 00:00:00 GMT"), ("Expires", "Sun, 04 Jan 2015 12:00:00 GMT")]
        #expect(Self.expiry(headers) == Self.day * 3 + .seconds(12 * 3600))
    }

    @Test func expiresWithoutADateCountsFromTheDownloadAndUnreadableIsExpired() {
        // 1_790_000_000 s is Mon, 21 Sep 2026 14:13:20 GMT.
        #expect(Self.expiry([("Expires", "Wed, 23 Sep 2026 14:13:20 GMT")]) == Self.day * 2)
        #expect(Self.expiry([("Date", "Thu, 01 Jan 2015 00:00:00 GMT"), ("Expires", "0")]) == .seconds(3600))
        #expect(Self.expiry([("Cache-Control", "max-age=soon")]) == Self.day * 7)
        #expect(Self.expiry([("Cache-Control", "no-cache")]) == Self.day * 7)
    }

    @Test func neverLongerThanFourteenDays() {
        #expect(Self.expiry([("Cache-Control", "max-age=31536000")]) == Self.day * 14)
        #expect(Self.expiry([("Cache-Control", "max-age=99999999999999999999999")]) == Self.day * 14)
        let headers = [("Date", "Thu, 01 Jan 2015 00:00:00 GMT"), ("Expires", "Fri, 01 Jan 2016 00:00:00 GMT")]
        #expect(Self.expiry(headers) == Self.day * 14)
    }

    @Test func aFileCalledStaleAtOnceIsUsedForAnHour() {
        #expect(Self.expiry([("Cache-Control", "max-age=0")]) == .seconds(3600))
        let headers = [("Date", "Thu, 01 Jan 2015 00:00:00 GMT"), ("Expires", "Wed, 31 Dec 2014 00:00:00 GMT")]
        #expect(Self.expiry(headers) == .seconds(3600))
    }

    @Test func httpDatesAreReadExactlyAndOnlyWhenReal() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == WallTime(microseconds: 784_111_777_000_000))
        #expect(HTTPDate.parse("Thu, 29 Feb 2024 23:59:59 GMT") == WallTime(microseconds: 1_709_251_199_000_000))
        for text in [
            "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 UTC",
            "Thu, 29 Feb 2023 00:00:00 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 6 Nov 1994 08:49:37 GMT", "",
        ] {
            #expect(HTTPDate.parse(text) == nil, "\(text)")
        }
    }
}

/// Which files are kept, and their text.
@Suite("Predicted orbits: the kept files")
struct PredictedOrbitCacheTests {
    static let now = WallTime(microseconds: 1_790_000_000_000_000)
    static let servers = ["https://a.example/xtra3grc.bin", "https://b.example/xtra3grc.bin"]

    static func file(servers: [String] = servers, downloaded: WallTime = now, days: Int = 7, data: [UInt8] = [1, 2, 3])
        -> PredictedOrbitFile
    {
        PredictedOrbitFile(
            servers: servers, source: servers[0], downloaded: downloaded,
            expires: downloaded.advanced(by: .seconds(days * 86_400)), data: data)
    }

    @Test func aFileIsGivenForItsServersUntilItExpires() {
        var cache = PredictedOrbitCache(capacity: 4)
        let file = Self.file()
        cache.store(file, now: Self.now)
        #expect(cache.file(for: Self.servers, at: Self.now) == file)
        #expect(cache.file(for: Array(Self.servers.reversed()), at: Self.now) == nil)
        #expect(cache.file(for: Self.servers, at: file.expires.advanced(by: .microseconds(-1))) == file)
        #expect(cache.file(for: Self.servers, at: file.expires) == nil)
    }

    @Test func aKeptFileWhoseTimesCannotBeIsNotUsed() {
        // Downloaded while the clock was ahead, or edited: before its download, or valid for more than 14 days.
        var cache = PredictedOrbitCache(capacity: 4)
        let early = Self.file(downloaded: Self.now.advanced(by: .seconds(86_400)))
        cache.store(early, now: early.downloaded)
        #expect(cache.file(for: Self.servers, at: Self.now) == nil)
        let long = Self.file(days: 15)
        #expect(!long.isValid(at: Self.now))
        cache.store(long, now: Self.now)
        #expect(cache.file(for: Self.servers, at: Self.now) == nil)
    }

    @Test func aFileForTooManyOrTooLongServersIsNotKept() {
        var cache = PredictedOrbitCache(capacity: 4)
        let many = (0...PredictedOrbitCache.maximumServers).map { "https://\($0).example/x" }
        cache.store(Self.file(servers: many), now: Self.now)
        let long = "https://a.example/" + String(repeating: "x", count: PredictedOrbitCache.maximumURLLength)
        cache.store(Self.file(servers: [long]), now: Self.now)
        #expect(cache.files.isEmpty)
        let most = Array(many.dropLast())
        cache.store(Self.file(servers: most), now: Self.now)
        #expect(cache.files.count == 1)
    }

    @Test func aNewerFileReplacesTheOneForTheSameServersAndTheOldestGoes() {
        var cache = PredictedOrbitCache(capacity: 2)
        cache.store(Self.file(), now: Self.now)
        let newer = Self.file(downloaded: Self.now.advanced(by: .seconds(60)), data: [9])
        cache.store(newer, now: newer.downloaded)
        #expect(cache.files == [newer])
        let other = Self.file(servers: ["https://c.example/x"])
        let third = Self.file(servers: ["https://d.example/x"])
        cache.store(other, now: Self.now)
        cache.store(third, now: Self.now)
        #expect(cache.files == [other, third])
    }

    @Test func theTextReadsBackAndLeavesExpiredFilesOut() throws {
        var cache = PredictedOrbitCache(capacity: 4)
        let binary = (0..<300).map { UInt8($0 % 256) }
        cache.store(Self.file(data: binary), now: Self.now)
        cache.store(Self.file(servers: ["https://c.example/x"], days: 1), now: Self.now)
        let text = cache.serialized()
        #expect(text.hasPrefix("predicted-orbits 1\n"))
        #expect(try PredictedOrbitCache.parse(text, now: Self.now, capacity: 4) == cache)
        let later = try PredictedOrbitCache.parse(text, now: Self.now.advanced(by: .seconds(2 * 86_400)), capacity: 4)
        #expect(later.files == [Self.file(data: binary)])
    }

    @Test(arguments: [
        ("", 1, PredictedOrbitCacheProblem.missingHeader),
        ("predicted-orbits 2\n", 1, .missingHeader),
        ("predicted-orbits 1\n1 2 https://a/x AQID\n", 2, .fieldCount),
        ("predicted-orbits 1\n2 1 https://a/x AQID https://a/x\n", 2, .badTime),
        ("predicted-orbits 1\nx 2 https://a/x AQID https://a/x\n", 2, .badTime),
        ("predicted-orbits 1\n1 2 https://a/x AQI https://a/x\n", 2, .badData),
        ("predicted-orbits 1\n1 2 file:///etc/x AQID https://a/x\n", 2, .badURL),
        ("predicted-orbits 1\n1 1209600000002 https://a/x AQID https://a/x\n", 2, .badTime),
        (
            "predicted-orbits 1\n1 2 https://a/x AQID https://a/x https://b/x https://c/x https://d/x https://e/x "
                + "https://f/x https://g/x https://h/x https://i/x\n", 2, .tooManyServers
        ),
    ])
    func aBadLineIsRefusedByNumber(text: String, line: Int, problem: PredictedOrbitCacheProblem) {
        #expect(throws: LineError(line: line, problem: problem)) {
            try PredictedOrbitCache.parse(text, now: Self.now, capacity: 4)
        }
    }

    @Test func base64RoundTripsAndRefusesAnythingElse() {
        for length in 0..<8 {
            let bytes = (0..<length).map { UInt8(200 + $0) }
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        }
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
        for text in ["Zm8", "Zm9=", "Z===", "Zm 8", "Zm8=Zm8=", "Zm-_"] {
            #expect(Base64.decode(text) == nil, "\(text)")
        }
    }
}

/// When a file may be downloaded.
@Suite("Predicted orbits: when to download")
struct PredictedOrbitDownloadRuleTests {
    static let servers = ["https://a.example/x"]

    @Test func networkPositioningOffRefusesEveryDownload() {
        let rule = PredictedOrbitDownloadRule(networkPositioningEnabled: false, overMeteredConnection: true)
        #expect(rule.refusal(for: Self.servers, at: ManualClock().monotonicNow) == .networkPositioningOff)
    }

    @Test func aMeteredConnectionRefusesUnlessAllowed() {
        let rule = PredictedOrbitDownloadRule(networkPositioningEnabled: true, overMeteredConnection: false)
        #expect(rule.asksWhetherMetered)
        #expect(rule.refusal(metered: true) == .meteredConnection)
        #expect(rule.refusal(metered: false) == nil)
        let allowed = PredictedOrbitDownloadRule(networkPositioningEnabled: true, overMeteredConnection: true)
        #expect(!allowed.asksWhetherMetered)
        #expect(allowed.refusal(metered: true) == nil)
        #expect([0, 1, 2, 3, 4].map { NetworkMetering.isMetered($0) } == [false, true, false, true, false])
    }

    @Test func aFailedDownloadIsNotRetriedForAnHourOnTheClock() {
        let clock = ManualClock()
        var rule = PredictedOrbitDownloadRule(networkPositioningEnabled: true, overMeteredConnection: false)
        #expect(rule.refusal(for: Self.servers, at: clock.monotonicNow) == nil)
        rule.failed(Self.servers, at: clock.monotonicNow)
        #expect(rule.refusal(for: Self.servers, at: clock.monotonicNow) == .recentFailure)
        #expect(rule.refusal(for: ["https://b.example/x"], at: clock.monotonicNow) == nil)
        clock.advance(by: PredictedOrbitDownloadRule.retryDelay - .milliseconds(1))
        #expect(rule.refusal(for: Self.servers, at: clock.monotonicNow) == .recentFailure)
        clock.advance(by: .milliseconds(1))
        #expect(rule.refusal(for: Self.servers, at: clock.monotonicNow) == nil)
        rule.failed(Self.servers, at: clock.monotonicNow)
        rule.succeeded(Self.servers)
        #expect(rule.refusal(for: Self.servers, at: clock.monotonicNow) == nil)
    }
}
