import Synchronization

/// A clock that moves only when told to; tests drive timing-dependent domain logic with it.
public final class ManualClock: Clock {
    private let state: Mutex<(MonotonicTime, WallTime)>

    /// Starts at monotonic zero and the given wall time.
    public init(wall: WallTime = WallTime(microseconds: 1_700_000_000_000_000)) {
        state = Mutex((MonotonicTime(nanoseconds: 0), wall))
    }

    public var monotonicNow: MonotonicTime { state.withLock { $0.0 } }

    public var wallNow: WallTime { state.withLock { $0.1 } }

    /// Moves both clocks forward by `duration`.
    public func advance(by duration: Duration) {
        state.withLock { clocks in
            clocks.0 = clocks.0 + duration
            clocks.1 = clocks.1.advanced(by: duration)
        }
    }
}
