/// At most ``limit`` checks at polkitd at once; the rest wait their turn, fairly between users.
///
/// The bookkeeping of the limit, without the waiting itself: ``admit(_:user:now:)`` says whether a check may be
/// sent now, is queued, or is refused; ``release()`` frees a slot or hands it to the next check to send; and
/// ``expire(now:)`` removes the checks that waited ``queueTimeout`` or longer, which are then refused as waiting too
/// long, not as polkit failing. The time meant for an absent or hung polkit starts only when a check is sent.
///
/// Each user has a queue of their own, in order; a free slot goes to the users with waiting checks in turn
/// (round-robin, a user arriving joining at the end of the round), so one user's flood of checks that cannot be
/// answered from the cache makes another user's check wait for at most one check of each other waiting user, not
/// for the whole flood. A user may have at most ``perUserLimit`` checks waiting; more are refused at once, for
/// that user only.
public struct PolkitCheckQueue<Waiter: Sendable>: Sendable {
    /// How many checks may be at polkitd at once.
    public static var defaultLimit: Int { 16 }
    /// How long a check may wait for its turn before it is refused.
    public static var defaultQueueTimeout: Duration { .seconds(60) }
    /// How many checks one user may have waiting.
    public static var defaultPerUserLimit: Int { 1024 }

    /// What becomes of a check.
    public enum Admission: Equatable, Sendable {
        /// Send it now: a slot is taken for it.
        case send
        /// It waits its turn; ``release()`` or ``expire(now:)`` hands it back.
        case wait
        /// Its user already has ``perUserLimit`` checks waiting.
        case refuse
    }

    /// One user's waiting checks, oldest first.
    private struct Line: Sendable {
        var items: [(waiter: Waiter, since: MonotonicTime)] = []
        var head = 0

        var count: Int { items.count - head }
        var oldest: MonotonicTime? { head < items.count ? items[head].since : nil }

        mutating func removeFirst() -> Waiter {
            let waiter = items[head].waiter
            head += 1
            if head > 64 && head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
            return waiter
        }
    }

    /// How many checks may be at polkitd at once.
    public let limit: Int
    /// How long a check may wait for its turn.
    public let queueTimeout: Duration
    /// How many checks one user may have waiting.
    public let perUserLimit: Int
    private var running = 0
    private var lines: [UInt32: Line] = [:]
    /// The users with waiting checks, in the order they are served.
    private var turns: [UInt32] = []
    /// The index in ``turns`` of the user served next.
    private var nextTurn = 0
    private var waiting = 0

    /// A queue letting `limit` checks run at once, whose checks wait at most `queueTimeout`, with at most
    /// `perUserLimit` of one user's waiting.
    public init(
        limit: Int = Self.defaultLimit, queueTimeout: Duration = Self.defaultQueueTimeout,
        perUserLimit: Int = Self.defaultPerUserLimit
    ) {
        self.limit = max(1, limit)
        self.queueTimeout = queueTimeout
        self.perUserLimit = max(1, perUserLimit)
    }

    /// Checks at polkitd now.
    public var runningCount: Int { running }
    /// Checks waiting for a slot.
    public var waitingCount: Int { waiting }
    /// Checks of `user` waiting for a slot.
    public func waitingCount(of user: UInt32) -> Int { lines[user]?.count ?? 0 }

    /// Whether the check `waiter` of `user` is sent now, waits its turn, or is refused.
    public mutating func admit(_ waiter: Waiter, user: UInt32, now: MonotonicTime) -> Admission {
        if running < limit && waiting == 0 {
            running += 1
            return .send
        }
        var line = lines[user] ?? Line()
        guard line.count < perUserLimit else { return .refuse }
        if line.count == 0 { turns.append(user) }
        line.items.append((waiter, now))
        lines[user] = line
        waiting += 1
        return .wait
    }

    /// A check at polkitd completed: its slot goes to the oldest waiting check of the user whose turn it is,
    /// returned to be sent now.
    public mutating func release() -> Waiter? {
        guard waiting > 0 else {
            running = max(0, running - 1)
            return nil
        }
        let user = turns[nextTurn]
        let (waiter, emptied) = removeFirst(of: user)
        if !emptied { nextTurn += 1 }
        if nextTurn >= turns.count { nextTurn = 0 }
        return waiter
    }

    /// The waiting checks that waited `queueTimeout` or longer, removed from the queue, oldest first.
    public mutating func expire(now: MonotonicTime) -> [Waiter] {
        var expired: [(waiter: Waiter, since: MonotonicTime)] = []
        for user in turns {
            while let since = lines[user]?.oldest, now - since >= queueTimeout {
                expired.append((removeFirst(of: user).waiter, since))
            }
        }
        if nextTurn >= turns.count { nextTurn = 0 }
        // By the time they queued; checks queued at the same time keep their order.
        return expired.enumerated().sorted { ($0.element.since, $0.offset) < ($1.element.since, $1.offset) }
            .map(\.element.waiter)
    }

    /// When the oldest waiting check runs out of time, if any waits.
    public var nextExpiry: MonotonicTime? {
        lines.values.compactMap(\.oldest).min().map { $0 + queueTimeout }
    }

    /// Takes the oldest waiting check of `user`; `emptied` is true when that was the user's last, so the user
    /// left the round.
    private mutating func removeFirst(of user: UInt32) -> (waiter: Waiter, emptied: Bool) {
        waiting -= 1
        let waiter = lines[user]!.removeFirst()
        guard lines[user]!.count == 0 else { return (waiter, false) }
        lines[user] = nil
        if let index = turns.firstIndex(of: user) {
            turns.remove(at: index)
            if index < nextTurn { nextTurn -= 1 }
        }
        return (waiter, true)
    }
}
