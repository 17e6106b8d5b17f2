import Synchronization
import Testing
import WhereaboutsCore

/// What timers ran, in order, and at which monotonic time.
private final class Runs: Sendable {
    let log = Mutex<[(String, Int64)]>([])

    func note(_ name: String, _ clock: ManualClock) {
        let now = clock.monotonicNow.nanoseconds
        log.withLock { $0.append((name, now)) }
    }

    var names: [String] { log.withLock { $0.map(\.0) } }
    var times: [Int64] { log.withLock { $0.map(\.1) } }
}

@Test func timersRunAtTheirDeadlinesEarliestFirst() {
    let clock = ManualClock()
    let runs = Runs()
    clock.scheduleTimer(after: .seconds(2)) { runs.note("b", clock) }
    clock.scheduleTimer(after: .seconds(1)) { runs.note("a", clock) }
    clock.scheduleTimer(after: .seconds(1)) { runs.note("a2", clock) }
    clock.advance(by: .milliseconds(999))
    #expect(runs.names.isEmpty)
    clock.advance(by: .seconds(5))
    #expect(runs.names == ["a", "a2", "b"])
    #expect(runs.times == [1_000_000_000, 1_000_000_000, 2_000_000_000])
    #expect(clock.monotonicNow.nanoseconds == 5_999_000_000)
    #expect(clock.armedTimers == 0)
}

@Test func aCancelledTimerNeverRunsAndATimerArmedByATimerRunsWhenDue() {
    let clock = ManualClock()
    let runs = Runs()
    let cancelled = clock.scheduleTimer(after: .seconds(1)) { runs.note("cancelled", clock) }
    clock.scheduleTimer(after: .seconds(1)) {
        runs.note("first", clock)
        clock.scheduleTimer(after: .seconds(1)) { runs.note("second", clock) }
    }
    clock.cancelTimer(cancelled)
    clock.advance(by: .seconds(3))
    #expect(runs.names == ["first", "second"])
    #expect(runs.times == [1_000_000_000, 2_000_000_000])
}

@Test func theWallClockMovesWithTheTimers() {
    let start = WallTime(microseconds: 1_000_000)
    let clock = ManualClock(wall: start)
    let seen = Mutex<WallTime?>(nil)
    clock.scheduleTimer(after: .seconds(1)) { seen.withLock { $0 = clock.wallNow } }
    clock.advance(by: .seconds(2))
    #expect(seen.withLock { $0 } == WallTime(microseconds: 2_000_000))
    #expect(clock.wallNow == WallTime(microseconds: 3_000_000))
}
