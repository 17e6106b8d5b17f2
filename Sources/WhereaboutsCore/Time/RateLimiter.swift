/// How often one peer may have something done: a token bucket per key. Log lines a peer causes are limited per
/// user and kind of line, so that a peer repeating what makes the daemon warn cannot flood the journal; costly
/// calls such as `Introspect` are limited per user, so that one user cannot take the bus thread from the others.
/// Below, "lines" stands for whatever is limited.
///
/// A key may log ``burst`` lines at once, then one every `period / burst` (5 lines, then one every 2 s, with the
/// defaults). Lines beyond that are suppressed and counted; the next line the key may log carries the count
/// (``Decision/log(suppressed:)``), so the journal says how many were left out. The bucket is kept as the time at
/// which it is full again (the generic cell rate algorithm), in whole nanoseconds.
///
/// At most ``capacity`` keys are followed. A key whose bucket is full again and that has nothing suppressed is
/// the same as one never seen, so it is forgotten when room is needed; if no key can be forgotten, a line of a new
/// key is suppressed and counted with the next line logged under any key.
public struct RateLimiter<Key: Hashable & Sendable>: Sendable {
    /// Lines a key may log at once.
    public static var defaultBurst: Int { 5 }
    /// The time in which a key's bucket refills completely.
    public static var defaultPeriod: Duration { .seconds(10) }
    /// The most keys followed at once.
    public static var defaultCapacity: Int { 1024 }

    /// What to do with one line.
    public enum Decision: Equatable, Sendable {
        /// Log it, saying that `suppressed` lines like it were left out since the last one logged (0: none).
        case log(suppressed: Int)
        /// Leave it out; it is counted.
        case suppress
    }

    private struct Bucket: Sendable {
        /// When the bucket is full again.
        var fullAt: MonotonicTime
        /// Lines left out since the key last logged.
        var suppressed: Int
    }

    /// Lines a key may log at once.
    public let burst: Int
    /// The time in which a bucket refills completely.
    public let period: Duration
    /// The most keys followed at once.
    public let capacity: Int
    private let interval: Duration
    private var buckets: [Key: Bucket] = [:]
    /// Lines of keys there was no room for, told with the next line logged.
    private var unfollowed = 0

    /// A limiter letting each key log `burst` lines at once and `burst` lines every `period`, following at most
    /// `capacity` keys.
    public init(
        burst: Int = Self.defaultBurst, period: Duration = Self.defaultPeriod, capacity: Int = Self.defaultCapacity
    ) {
        self.burst = max(1, burst)
        self.period = period
        self.capacity = max(1, capacity)
        interval = period / self.burst
    }

    /// The number of keys followed now.
    public var trackedCount: Int { buckets.count }

    /// Whether a line of `key` at `now` is logged or left out.
    public mutating func admit(_ key: Key, now: MonotonicTime) -> Decision {
        guard var bucket = buckets[key] ?? newBucket(now: now) else {
            unfollowed += 1
            return .suppress
        }
        let fullAt = max(bucket.fullAt, now)
        // The bucket holds a token while it would be full again within period - interval.
        guard fullAt - now <= period - interval else {
            bucket.suppressed += 1
            buckets[key] = bucket
            return .suppress
        }
        let suppressed = bucket.suppressed + unfollowed
        unfollowed = 0
        buckets[key] = Bucket(fullAt: fullAt + interval, suppressed: 0)
        return .log(suppressed: suppressed)
    }

    /// A full bucket for a key not yet followed, making room if needed; nil when there is none.
    private mutating func newBucket(now: MonotonicTime) -> Bucket? {
        if buckets.count >= capacity {
            buckets = buckets.filter { $0.value.fullAt > now || $0.value.suppressed > 0 }
            if buckets.count >= capacity { return nil }
        }
        return Bucket(fullAt: now, suppressed: 0)
    }
}

extension RateLimiter {
    /// `message` as it is to be logged for `key` at `now`, carrying the count of lines left out before it; nil when
    /// it is left out itself.
    public mutating func line(_ message: String, for key: Key, now: MonotonicTime) -> String? {
        let decision = admit(key, now: now)
        return decision == .suppress ? nil : message + decision.suffix
    }
}

extension RateLimiter.Decision {
    /// The text to append to a logged line: nothing, or how many lines like it were left out.
    public var suffix: String {
        switch self {
        case .log(let suppressed) where suppressed > 0:
            " (\(suppressed) similar line\(suppressed == 1 ? "" : "s") suppressed before this one)"
        default: ""
        }
    }
}
