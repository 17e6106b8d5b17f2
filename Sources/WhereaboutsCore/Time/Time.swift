/// A point in wall-clock time, in microseconds since the Unix epoch.
///
/// Fix timestamps use it; `org.freedesktop.GeoClue2.Location.Timestamp` carries it as `(tt)`.
public struct WallTime: Sendable, Hashable, Comparable {
    /// Microseconds since 1970-01-01T00:00:00Z.
    public var microseconds: Int64

    public init(microseconds: Int64) { self.microseconds = microseconds }

    public init(seconds: Double) { self.microseconds = Int64((seconds * 1_000_000).rounded()) }

    /// Whole seconds since the epoch.
    public var seconds: Int64 { microseconds >= 0 ? microseconds / 1_000_000 : (microseconds - 999_999) / 1_000_000 }

    /// The microseconds past `seconds`, in 0..<1_000_000.
    public var subsecondMicroseconds: Int64 { microseconds - seconds * 1_000_000 }

    public static func < (lhs: WallTime, rhs: WallTime) -> Bool { lhs.microseconds < rhs.microseconds }

    /// This time moved by `duration`.
    public func advanced(by duration: Duration) -> WallTime {
        WallTime(microseconds: microseconds + duration.wholeMicroseconds)
    }

    /// The signed time from `other` to this time.
    public func since(_ other: WallTime) -> Duration { .microseconds(microseconds - other.microseconds) }
}

/// A point on a monotonic clock, for timers and ages; it never jumps when the wall clock is set.
public struct MonotonicTime: Sendable, Hashable, Comparable {
    /// Nanoseconds since an arbitrary origin (boot, for the system clock).
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    public static func < (lhs: MonotonicTime, rhs: MonotonicTime) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    public static func + (lhs: MonotonicTime, rhs: Duration) -> MonotonicTime {
        MonotonicTime(nanoseconds: lhs.nanoseconds + rhs.wholeNanoseconds)
    }

    public static func - (lhs: MonotonicTime, rhs: MonotonicTime) -> Duration {
        .nanoseconds(lhs.nanoseconds - rhs.nanoseconds)
    }
}

/// The two clocks the domain reads. The daemon uses the system's; tests use ``ManualClock``.
public protocol Clock: Sendable {
    /// Now, on the monotonic clock.
    var monotonicNow: MonotonicTime { get }
    /// Now, on the wall clock.
    var wallNow: WallTime { get }
}

extension Duration {
    /// The duration in whole microseconds, rounded toward zero.
    public var wholeMicroseconds: Int64 { wholeNanoseconds / 1_000 }

    /// The duration in whole nanoseconds, saturating at `Int64`'s bounds.
    public var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }

    /// The duration in seconds, as a floating-point number.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
