/// When a positioning service may be asked again after a failure.
///
/// * **Transient** failures — server trouble (5xx, 429), timeouts, refused or unreachable connections,
///   unresolvable hosts, TLS failures (a captive portal intercepts the connection), answers that cannot be used
///   (a portal's login page) — wait ``firstDelay`` (10 s), then twice as long after each further one in a row
///   (20 s, 40 s, …), at most ``maximumDelay`` (10 min).
/// * **Refusals** — 400, 401, 403 and other 4xx: a bad key, a daily limit, a request the service will never
///   accept — wait ``refusalDelay`` (1 hour) each time, as does a missing HTTP library. Only the first refusal
///   since the last success is to be logged (``BackoffStep/shouldLog``), so a misconfigured service yields one
///   log line, not one an hour.
/// * A transient failure is to be logged when it starts a run of failures; its repetitions are not.
/// * A success (a position or not-found) ends the wait and resets both counts.
/// * Joining a network (``networkChanged()``) ends a transient wait, not a refusal's.
///
/// The rule has no randomness: one machine asking a service needs no jitter to spread its retries.
public struct LookupBackoff: Sendable, Equatable {
    /// The kind of failure, which sets the wait.
    public enum FailureKind: Sendable, Equatable {
        /// May go away soon: waits grow from ``LookupBackoff/firstDelay``.
        case transient
        /// Will not go away by itself: waits ``LookupBackoff/refusalDelay``.
        case refused
    }

    /// What to do after a failure.
    public struct BackoffStep: Sendable, Equatable {
        /// How long to wait.
        public var delay: Duration
        /// When the next attempt may be made.
        public var retryAt: MonotonicTime
        /// True when this failure is worth a log line (see ``LookupBackoff``).
        public var shouldLog: Bool

        /// Makes a step.
        public init(delay: Duration, retryAt: MonotonicTime, shouldLog: Bool) {
            self.delay = delay
            self.retryAt = retryAt
            self.shouldLog = shouldLog
        }
    }

    /// The wait after the first transient failure in a row.
    public static let firstDelay: Duration = .seconds(10)
    /// The longest wait after transient failures.
    public static let maximumDelay: Duration = .seconds(600)
    /// The wait after a refusal.
    public static let refusalDelay: Duration = .seconds(3600)

    /// Transient failures since the last success or refusal.
    public private(set) var consecutiveTransientFailures = 0
    /// True once a refusal has been reported for logging, until a success.
    public private(set) var refusalLogged = false
    /// When the next attempt may be made; nil when it may be made now.
    public private(set) var retryAt: MonotonicTime?

    /// No failure yet.
    public init() {}

    /// True when an attempt may be made at `now`.
    public func allowsAttempt(now: MonotonicTime) -> Bool { retryAt.map { now >= $0 } ?? true }

    /// Records a success: the next attempt may be made at once, and failures count from zero again.
    public mutating func succeeded() {
        consecutiveTransientFailures = 0
        refusalLogged = false
        retryAt = nil
    }

    /// Records that the machine joined a network (or another one): a wait after transient failures ends at once,
    /// since they were most likely the network's, not the service's; a refusal's wait stands, the service having
    /// answered.
    public mutating func networkChanged() {
        guard consecutiveTransientFailures > 0 else { return }
        consecutiveTransientFailures = 0
        retryAt = nil
    }

    /// Records a failure of `kind` at `now`.
    @discardableResult
    public mutating func failed(_ kind: FailureKind, now: MonotonicTime) -> BackoffStep {
        let delay: Duration
        let shouldLog: Bool
        switch kind {
        case .transient:
            shouldLog = consecutiveTransientFailures == 0
            let doublings = min(consecutiveTransientFailures, 16)
            consecutiveTransientFailures += 1
            delay = min(LookupBackoff.firstDelay * (1 << doublings), LookupBackoff.maximumDelay)
        case .refused:
            shouldLog = !refusalLogged
            refusalLogged = true
            consecutiveTransientFailures = 0
            delay = LookupBackoff.refusalDelay
        }
        let step = BackoffStep(delay: delay, retryAt: now + delay, shouldLog: shouldLog)
        retryAt = step.retryAt
        return step
    }

    /// Records what a lookup at `now` came to; nil for a success (a position or not-found), the step otherwise.
    @discardableResult
    public mutating func record(_ outcome: IchnaeaOutcome, now: MonotonicTime) -> BackoffStep? {
        guard let kind = outcome.failureKind else {
            succeeded()
            return nil
        }
        return failed(kind, now: now)
    }

    /// Records an exchange at `now` that produced no response.
    @discardableResult
    public mutating func record(_ failure: HTTPFailure, now: MonotonicTime) -> BackoffStep {
        failed(failure.failureKind, now: now)
    }
}

extension IchnaeaOutcome {
    /// The kind of failure this is for ``LookupBackoff``; nil for a position or not-found, which are answers.
    public var failureKind: LookupBackoff.FailureKind? {
        switch self {
        case .position, .notFound: nil
        case .refused: .refused
        case .serverTrouble, .malformed: .transient
        }
    }
}

extension HTTPFailure {
    /// The kind of failure this is for ``LookupBackoff``: transient, except a missing HTTP library, which stays
    /// missing.
    public var failureKind: LookupBackoff.FailureKind {
        switch self {
        case .unavailable: .refused
        case .unresolvable, .unreachable, .timedOut, .tls, .tooLarge, .other: .transient
        }
    }
}
