/// The login session a polkit check's subject is in, as far as the daemon knows it: a part of the cache key,
/// because polkit's `allow_active` and `allow_inactive` defaults and rules reading `subject.active` or
/// `subject.local` decide by it.
public enum PolkitSessionKey: Hashable, Sendable {
    /// The session with this id (logind's object path), active or not. Whether it is local cannot change during a
    /// session's life, so the id stands for it.
    case session(id: String, active: Bool)
    /// The process is in no login session (and its user has no graphical one).
    case none
    /// logind is not on the bus, so sessions cannot be told apart.
    case unknown
}

/// Everything polkit's answer about one of the daemon's actions can depend on: the caller's user, its login
/// session, the action and the details passed.
public struct PolkitCheckKey: Hashable, Sendable {
    /// The caller's Unix user.
    public var uid: UInt32
    /// The caller's login session.
    public var session: PolkitSessionKey
    /// The polkit action id.
    public var action: String
    /// The details passed to polkit, which rules read with `action.lookup`.
    public var details: [String: String]

    /// The key of the check of `action` with `details` for user `uid` in `session`.
    public init(uid: UInt32, session: PolkitSessionKey, action: String, details: [String: String]) {
        self.uid = uid
        self.session = session
        self.action = action
        self.details = details
    }
}

/// When polkit's answers to non-interactive checks are reused, and which checks in flight are one.
///
/// An answer (yes, no or challenge) is reused for the same ``PolkitCheckKey`` until one of these happens:
/// - it is ``maximumAge`` old (60 s), so that anything else a rule reads (the time of day, a file) reaches
///   decisions within a minute;
/// - polkit says its policy changed (`Authority.Changed`, or polkitd restarting): ``policyChanged()`` forgets all;
/// - the session's `Active` changes: ``sessionChanged(id:)`` forgets that session's answers;
/// - a stored grant of the user is set or revoked: ``grantsChanged(uid:)`` forgets that user's answers.
///
/// A check asked while an identical one is in flight joins it (``begin(_:now:)`` answers ``Begin/join(_:)``). An
/// invalidation also detaches the checks in flight it concerns: their answers are handed to their waiters but not
/// kept, and a later identical check is sent afresh. Failures are never kept. The cache holds at most
/// ``capacity`` answers; when full, expired ones go first, then all of them.
public struct PolkitAnswerCache: Sendable {
    /// How long an answer is reused.
    public static let maximumAge: Duration = .seconds(60)
    /// How many answers are kept at most.
    public static let capacity = 4096

    /// A check sent to polkit, which identical checks join until it completes.
    public struct Ticket: Hashable, Sendable {
        /// Tells this check from earlier and later ones with the same key.
        public let id: UInt64
        /// What was asked.
        public let key: PolkitCheckKey
    }

    /// What to do for a check.
    public enum Begin: Equatable, Sendable {
        /// polkit's answer is known: no check.
        case cached(PolkitAnswer)
        /// An identical check is in flight: wait for its answer.
        case join(Ticket)
        /// Send the check to polkit, then hand its outcome to ``finish(_:answer:now:)``.
        case send(Ticket)
    }

    private struct Entry: Sendable {
        var answer: PolkitAnswer
        var at: MonotonicTime
    }

    private let maximumAge: Duration
    private let capacity: Int
    private var entries: [PolkitCheckKey: Entry] = [:]
    private var inFlight: [PolkitCheckKey: UInt64] = [:]
    private var nextID: UInt64 = 1

    /// An empty cache whose answers hold for `maximumAge`, keeping at most `capacity` of them.
    public init(maximumAge: Duration = PolkitAnswerCache.maximumAge, capacity: Int = PolkitAnswerCache.capacity) {
        self.maximumAge = maximumAge
        self.capacity = max(1, capacity)
    }

    /// The number of answers kept (expired ones included until they are looked up or evicted).
    public var count: Int { entries.count }

    /// The number of distinct checks in flight.
    public var inFlightCount: Int { inFlight.count }

    /// The answer kept for `key`, if it is younger than the maximum age.
    public mutating func answer(for key: PolkitCheckKey, now: MonotonicTime) -> PolkitAnswer? {
        guard let entry = entries[key] else { return nil }
        guard now - entry.at < maximumAge else {
            entries[key] = nil
            return nil
        }
        return entry.answer
    }

    /// Whether the check `key` is answered from the cache, joins one in flight, or is sent.
    public mutating func begin(_ key: PolkitCheckKey, now: MonotonicTime) -> Begin {
        if let answer = answer(for: key, now: now) { return .cached(answer) }
        if let id = inFlight[key] { return .join(Ticket(id: id, key: key)) }
        let ticket = Ticket(id: nextID, key: key)
        nextID += 1
        inFlight[key] = ticket.id
        return .send(ticket)
    }

    /// The check `ticket` completed: polkit's `answer`, or nil when it failed. The answer is kept only if nothing
    /// invalidated the check while it was in flight. Returns true when it was kept.
    @discardableResult
    public mutating func finish(_ ticket: Ticket, answer: PolkitAnswer?, now: MonotonicTime) -> Bool {
        guard inFlight[ticket.key] == ticket.id else { return false }
        inFlight[ticket.key] = nil
        guard let answer else { return false }
        if entries[ticket.key] == nil, entries.count >= capacity {
            entries = entries.filter { now - $0.value.at < maximumAge }
            if entries.count >= capacity { entries.removeAll() }
        }
        entries[ticket.key] = Entry(answer: answer, at: now)
        return true
    }

    /// True while `ticket` is the check in flight for its key (no invalidation detached it).
    public func isCurrent(_ ticket: Ticket) -> Bool { inFlight[ticket.key] == ticket.id }

    /// polkit's policy changed (its `Changed` signal, or polkitd restarted): nothing kept holds.
    public mutating func policyChanged() {
        entries.removeAll()
        inFlight.removeAll()
    }

    /// The login session `id` became active or inactive, or ended.
    public mutating func sessionChanged(id: String) {
        forget { key in
            if case .session(let session, _) = key.session { return session == id }
            return false
        }
    }

    /// A stored decision of user `uid` was set or revoked.
    public mutating func grantsChanged(uid: UInt32) {
        forget { $0.uid == uid }
    }

    private mutating func forget(where matches: (PolkitCheckKey) -> Bool) {
        entries = entries.filter { !matches($0.key) }
        inFlight = inFlight.filter { !matches($0.key) }
    }
}
