import Synchronization

/// A clock that moves only when told to, and the timers scheduled on it: tests drive timing-dependent logic with
/// it, the domain's and the service's.
public final class ManualClock: Clock, TimerScheduler {
    private struct Timer {
        var deadline: MonotonicTime
        var action: @Sendable () -> Void
    }

    private struct State {
        var monotonic = MonotonicTime(nanoseconds: 0)
        var wall: WallTime
        var timers: [UInt64: Timer] = [:]
        var lastTimer: UInt64 = 0
    }

    private let state: Mutex<State>

    /// Starts at monotonic zero and the given wall time.
    public init(wall: WallTime = WallTime(microseconds: 1_700_000_000_000_000)) {
        state = Mutex(State(wall: wall))
    }

    public var monotonicNow: MonotonicTime { state.withLock { $0.monotonic } }

    public var wallNow: WallTime { state.withLock { $0.wall } }

    /// How many timers are armed and not yet due.
    public var armedTimers: Int { state.withLock { $0.timers.count } }

    /// Moves both clocks forward by `duration`, running each timer due by then at its deadline, earliest first
    /// (those armed in one instant in the order they were armed), on the calling thread. A timer that a timer
    /// arms runs too when it falls due within `duration`.
    public func advance(by duration: Duration) {
        let end = monotonicNow + duration
        while let due = nextDue(by: end) { due() }
        state.withLock { clocks in
            clocks.wall = clocks.wall.advanced(by: end - clocks.monotonic)
            clocks.monotonic = end
        }
    }

    /// Takes the earliest timer due by `end` off the list, moving the clocks to its deadline.
    private func nextDue(by end: MonotonicTime) -> (@Sendable () -> Void)? {
        state.withLock { clocks in
            let earliest = clocks.timers.min {
                ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key)
            }
            guard let (number, timer) = earliest, timer.deadline <= end else { return nil }
            clocks.timers[number] = nil
            if timer.deadline > clocks.monotonic {
                clocks.wall = clocks.wall.advanced(by: timer.deadline - clocks.monotonic)
                clocks.monotonic = timer.deadline
            }
            return timer.action
        }
    }

    @discardableResult
    public func scheduleTimer(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> ScheduledTimer {
        state.withLock { clocks in
            clocks.lastTimer += 1
            let deadline = clocks.monotonic + (delay < .zero ? .zero : delay)
            clocks.timers[clocks.lastTimer] = Timer(deadline: deadline, action: action)
            return ScheduledTimer(number: clocks.lastTimer)
        }
    }

    public func cancelTimer(_ timer: ScheduledTimer) {
        _ = state.withLock { $0.timers.removeValue(forKey: timer.number) }
    }
}
