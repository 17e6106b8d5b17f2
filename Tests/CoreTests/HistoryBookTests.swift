import Testing
import WhereaboutsCore

/// Each user's history of location use: kept for seven days and bounded per user and in all, the oldest dropped
/// first; written as appended lines, and whole only when enough was dropped or expired.
@Suite("History: bounds, expiry and what is written")
struct HistoryBookTests {
    static func use(_ app: String, at time: WallTime, for length: Duration = .seconds(60)) -> HistoryEntry {
        .use(
            AppUse(
                app: app, started: time, stopped: time.advanced(by: length), level: .exact, approximate: false,
                providers: [.wifi, .gpsd]))
    }

    static func lookup(at time: WallTime, apps: [String] = ["flatpak:org.example.Maps"]) -> HistoryEntry {
        .lookup(
            NetworkLookup(
                time: time, kind: .wifi, host: "api.beacondb.net", accessPoints: 12, cells: 1,
                outcome: .position(accuracy: 35), apps: apps))
    }

    @Test func aUserKeepsTheNewestEntriesUpToTheLimit() {
        let clock = ManualClock()
        var book = HistoryBook()
        for index in 0..<(HistoryBook.limitPerUser + 5) {
            book.record(Self.lookup(at: clock.wallNow, apps: ["claimed:app\(index)"]), user: 1000, now: clock.wallNow)
            clock.advance(by: .milliseconds(10))
        }
        let kept = book.entries(ofUser: 1000, since: WallTime(microseconds: 0), now: clock.wallNow)
        #expect(kept.count == HistoryBook.limitPerUser && book.count == HistoryBook.limitPerUser)
        guard case .lookup(let first) = kept.first, case .lookup(let last) = kept.last else {
            Issue.record("\(kept.prefix(1))")
            return
        }
        #expect(first.apps == ["claimed:app5"] && last.apps == ["claimed:app\(HistoryBook.limitPerUser + 4)"])
    }

    @Test func entriesExpireAfterSevenDaysAndSinceFilters() {
        let clock = ManualClock()
        var book = HistoryBook()
        book.record(Self.use("flatpak:old", at: clock.wallNow), user: 1000, now: clock.wallNow)
        clock.advance(by: .seconds(3 * 24 * 3600))
        let middle = clock.wallNow
        book.record(Self.use("flatpak:new", at: clock.wallNow), user: 1000, now: clock.wallNow)
        #expect(book.entries(ofUser: 1000, since: WallTime(microseconds: 0), now: clock.wallNow).count == 2)
        #expect(book.entries(ofUser: 1000, since: middle, now: clock.wallNow).count == 1)
        clock.advance(by: .seconds(4 * 24 * 3600 + 120))
        let left = book.entries(ofUser: 1000, since: WallTime(microseconds: 0), now: clock.wallNow)
        #expect(left == [Self.use("flatpak:new", at: middle)])
        #expect(book.entries(ofUser: 1001, since: WallTime(microseconds: 0), now: clock.wallNow).isEmpty)
    }

    /// One user's flood shrinks another's record only down to an equal share.
    @Test func theTotalBoundTakesFromWhoeverKeepsTheMost() {
        let clock = ManualClock()
        var book = HistoryBook()
        let users = HistoryBook.limitInAll / HistoryBook.limitPerUser
        for user in 0..<users {
            for _ in 0..<HistoryBook.limitPerUser {
                book.record(Self.lookup(at: clock.wallNow), user: UInt32(2000 + user), now: clock.wallNow)
            }
        }
        #expect(book.count == HistoryBook.limitInAll)
        for _ in 0..<500 { book.record(Self.lookup(at: clock.wallNow), user: 9999, now: clock.wallNow) }
        #expect(book.count == HistoryBook.limitInAll)
        let all = WallTime(microseconds: 0)
        #expect(book.entries(ofUser: 9999, since: all, now: clock.wallNow).count == 500)
        let shares = (0..<users).map { book.entries(ofUser: UInt32(2000 + $0), since: all, now: clock.wallNow).count }
        #expect(shares.reduce(0, +) == HistoryBook.limitInAll - 500 && shares.min()! >= HistoryBook.limitPerUser - 50)
    }

    @Test func newEntriesAreAppendedAndAFileIsWrittenWholeOnlyPastTheMargin() {
        let clock = ManualClock()
        var book = HistoryBook()
        book.record(Self.use("flatpak:a", at: clock.wallNow), user: 1000, now: clock.wallNow)
        // The first write makes the file whole, with its header.
        guard case .rewrite(1000, let text)? = book.takeWrites(now: clock.wallNow).first else {
            Issue.record("no first write")
            return
        }
        #expect(text.hasPrefix(HistoryFile.header + "\n"))
        #expect(book.takeWrites(now: clock.wallNow).isEmpty)
        book.record(Self.lookup(at: clock.wallNow), user: 1000, now: clock.wallNow)
        book.record(Self.lookup(at: clock.wallNow), user: 1000, now: clock.wallNow)
        let appended = book.takeWrites(now: clock.wallNow)
        guard case .append(1000, let lines)? = appended.first, appended.count == 1 else {
            Issue.record("\(appended)")
            return
        }
        #expect(lines.split(separator: "\n").count == 2 && !lines.contains("#"))

        // At the limit every entry drops one: appended until the file holds the margin's worth more.
        for _ in 0..<(HistoryBook.limitPerUser - 3) {
            book.record(Self.lookup(at: clock.wallNow), user: 1000, now: clock.wallNow)
        }
        #expect(book.takeWrites(now: clock.wallNow).allSatisfy { if case .append = $0 { true } else { false } })
        var whole = 0
        var appends = 0
        for _ in 0..<(3 * (HistoryBook.rewriteMargin + 1)) {
            book.record(Self.lookup(at: clock.wallNow), user: 1000, now: clock.wallNow)
            for write in book.takeWrites(now: clock.wallNow) {
                if case .rewrite = write { whole += 1 } else { appends += 1 }
            }
        }
        #expect(whole == 3 && appends == 3 * HistoryBook.rewriteMargin)
    }

    @Test func anExpiredLineIsRewrittenAwayWithinTheSlackAndAClearedUserLosesTheFile() {
        let clock = ManualClock()
        var book = HistoryBook()
        book.record(Self.use("flatpak:a", at: clock.wallNow), user: 1000, now: clock.wallNow)
        _ = book.takeWrites(now: clock.wallNow)
        clock.advance(by: .seconds(24 * 3600))
        book.record(Self.use("flatpak:b", at: clock.wallNow), user: 1000, now: clock.wallNow)
        _ = book.takeWrites(now: clock.wallNow)
        let due = try! #require(book.nextExpiry)
        #expect(due == WallTime(microseconds: 1_700_000_060_000_000).advanced(by: .seconds(7 * 24 * 3600 + 3600)))
        clock.advance(by: due.since(clock.wallNow))
        let writes = book.takeWrites(now: clock.wallNow)
        guard case .rewrite(1000, let text)? = writes.first, writes.count == 1 else {
            Issue.record("\(writes)")
            return
        }
        #expect(text.contains("flatpak:b") && !text.contains("flatpak:a"))
        book.clear(user: 1000)
        #expect(book.takeWrites(now: clock.wallNow) == [.remove(user: 1000)])
        #expect(book.count == 0 && book.keepingUsers.isEmpty && book.nextExpiry == nil)
    }
}
