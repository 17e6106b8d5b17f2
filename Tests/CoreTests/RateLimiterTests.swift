import Testing
import WhereaboutsCore

/// A value the `#expect` macro can mutate through.
private final class Limiter {
    var value: RateLimiter<UInt32>
    init(_ value: RateLimiter<UInt32>) { self.value = value }
    func admit(_ key: UInt32, now: MonotonicTime) -> RateLimiter<UInt32>.Decision { value.admit(key, now: now) }
    var trackedCount: Int { value.trackedCount }
}

@Suite("Log lines a peer causes are rate-limited")
struct RateLimiterTests {
    let clock = ManualClock()

    @Test func aBurstIsLoggedThenLinesAreSuppressed() {
        let limiter = Limiter(RateLimiter(burst: 5, period: .seconds(10)))
        for _ in 0..<5 { #expect(limiter.admit(7, now: clock.monotonicNow) == .log(suppressed: 0)) }
        for _ in 0..<1000 { #expect(limiter.admit(7, now: clock.monotonicNow) == .suppress) }
    }

    @Test func theNextLineLoggedCountsThoseSuppressed() {
        let limiter = Limiter(RateLimiter(burst: 5, period: .seconds(10)))
        for _ in 0..<5 { _ = limiter.admit(7, now: clock.monotonicNow) }
        for _ in 0..<37 { _ = limiter.admit(7, now: clock.monotonicNow) }
        // One token every 2 s.
        clock.advance(by: .milliseconds(1999))
        #expect(limiter.admit(7, now: clock.monotonicNow) == .suppress)
        clock.advance(by: .milliseconds(1))
        let resumed = limiter.admit(7, now: clock.monotonicNow)
        #expect(resumed == .log(suppressed: 38))
        #expect(resumed.suffix == " (38 similar lines suppressed before this one)")
        #expect(limiter.admit(7, now: clock.monotonicNow) == .suppress)
        clock.advance(by: .seconds(2))
        #expect(limiter.admit(7, now: clock.monotonicNow) == .log(suppressed: 1))
        #expect(RateLimiter<UInt32>.Decision.log(suppressed: 0).suffix == "")
    }

    @Test func aFloodLogsAFewLinesPerPeriodOnly() {
        let limiter = Limiter(RateLimiter(burst: 5, period: .seconds(10)))
        var logged = 0
        var counted = 0
        // 15 s of 2,500 lines a second, as a polkit flood caused.
        for _ in 0..<15_000 {
            if case .log(let suppressed) = limiter.admit(7, now: clock.monotonicNow) {
                logged += 1
                counted += suppressed
            }
            clock.advance(by: .microseconds(1000))
        }
        #expect(logged == 5 + 7, "the burst, then one every 2 s")
        // Every line up to the last one logged (at 14 s) was logged or counted.
        #expect(logged + counted == 14_001)
    }

    @Test func keysAreLimitedApart() {
        let limiter = Limiter(RateLimiter(burst: 2, period: .seconds(10)))
        for _ in 0..<100 { _ = limiter.admit(1, now: clock.monotonicNow) }
        #expect(limiter.admit(2, now: clock.monotonicNow) == .log(suppressed: 0))
        #expect(limiter.admit(2, now: clock.monotonicNow) == .log(suppressed: 0))
        #expect(limiter.admit(2, now: clock.monotonicNow) == .suppress)
    }

    @Test func aQuietKeyIsForgottenWhenRoomIsNeeded() {
        let limiter = Limiter(RateLimiter(burst: 1, period: .seconds(10), capacity: 2))
        #expect(limiter.admit(1, now: clock.monotonicNow) == .log(suppressed: 0))
        #expect(limiter.admit(2, now: clock.monotonicNow) == .log(suppressed: 0))
        #expect(limiter.admit(2, now: clock.monotonicNow) == .suppress)
        // No room, and neither key can be forgotten yet: the line is left out and counted.
        #expect(limiter.admit(3, now: clock.monotonicNow) == .suppress)
        #expect(limiter.trackedCount == 2)
        clock.advance(by: .seconds(10))
        // Key 1 is full again with nothing suppressed: forgotten for key 3, whose line carries the uncounted one.
        #expect(limiter.admit(3, now: clock.monotonicNow) == .log(suppressed: 1))
        #expect(limiter.trackedCount == 2)
        #expect(limiter.admit(2, now: clock.monotonicNow) == .log(suppressed: 1))
    }
}
