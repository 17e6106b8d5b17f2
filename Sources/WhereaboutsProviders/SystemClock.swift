import Loop
import WhereaboutsCore

/// The system's monotonic and wall clocks.
public struct SystemClock: WhereaboutsCore.Clock {
    public init() {}
    public var monotonicNow: MonotonicTime { MonotonicTime(nanoseconds: monotonicNanoseconds()) }
    public var wallNow: WallTime { WallTime(microseconds: wallMicroseconds()) }
}
