import DBus
import Loop
import LoopScheduling
import WhereaboutsCore

/// The ``Authoriser`` as the service uses it: polkit's answers reused while they hold, identical checks in flight
/// made once, and at most ``limit`` checks at polkitd at once, shared fairly between users.
///
/// Non-interactive checks whose subject's login session is known are answered from a ``PolkitAnswerCache``
/// (keyed by user, session, action and details) and invalidated by polkit's `Authority.Changed` signal (believed
/// only from the unique name that owns `org.freedesktop.PolicyKit1`; a new owner clears everything too), by a
/// change of a session's `Active`, by a change of a user's stored decisions, and after 60 s. Checks to polkitd
/// beyond the limit wait their turn, each user's in order and the users in turn (``PolkitCheckQueue``), so one
/// user's flood of checks the cache cannot answer does not make another user's wait behind it; a user with
/// ``perUserLimit`` checks waiting has the next refused at once (`LimitsExceeded`). The time meant for an absent or
/// hung polkit starts only when a check is sent, and a check that waited 60 s for its turn is refused as such.
/// Interactive checks (prompts) are neither cached nor queued: they wait for a person, not for polkitd. Warnings
/// callers cause are rate-limited per user (``RateLimiter``).
@BusActor
final class PolkitGate {
    static let busName = "org.freedesktop.PolicyKit1"
    static let authorityPath = ObjectPath("/org/freedesktop/PolicyKit1/Authority")!
    static let authorityInterface = "org.freedesktop.PolicyKit1.Authority"
    /// How many checks may be at polkitd at once.
    static let limit = 16
    /// How long a check may wait for its turn.
    static let queueTimeout: Duration = .seconds(60)
    /// How many checks one user may have waiting for their turn.
    static let perUserLimit = 1024

    /// A check waiting for its turn, and the user it is about.
    private struct Waiting: Sendable {
        let uid: UInt32
        let continuation: CheckedContinuation<Turn, Never>
    }

    /// How a check's wait for its turn ended.
    private enum Turn: Sendable {
        case now
        case waitedTooLong
        case tooManyWaiting
    }

    private let authoriser: any Authoriser
    private let connection: Connection
    private let clock: any WhereaboutsCore.Clock
    private let timers: any TimerScheduler
    private let logger: any Logger
    private var cache = PolkitAnswerCache()
    private var queue = PolkitCheckQueue<Waiting>(
        limit: PolkitGate.limit, queueTimeout: PolkitGate.queueTimeout, perUserLimit: PolkitGate.perUserLimit)
    private var warnings = RateLimiter<UInt32>()
    private var expiryTimer: ScheduledTimer?
    /// The checks that joined one in flight, by the ticket they wait for.
    private var joined: [UInt64: [CheckedContinuation<Result<PolkitAnswer, AuthorisationFailure>, Never>]] = [:]
    /// Following polkit's `Changed`: true once the match rules are in place (answers are kept only then).
    private var following: Task<Bool, Never>?
    private var polkitOwner: String?

    init(
        authoriser: any Authoriser, connection: Connection, clock: any WhereaboutsCore.Clock,
        timers: any TimerScheduler, logger: any Logger
    ) {
        self.timers = timers
        self.authoriser = authoriser
        self.connection = connection
        self.clock = clock
        self.logger = logger
    }

    /// polkit's answer for `action` about the connection `busName` of user `uid`, whose login session is
    /// `session` (nil when it could not be told: the answer is then neither reused nor kept).
    func check(
        busName: String, uid: UInt32, session: PolkitSessionKey?, action: String, details: [String: String],
        interactive: Bool, timeout: Duration
    ) async -> Result<PolkitAnswer, AuthorisationFailure> {
        if interactive {
            return await authoriser.check(
                busName: busName, action: action, details: details, interactive: true, timeout: timeout)
        }
        guard let session, await follow() else {
            return await send(busName: busName, uid: uid, action: action, details: details, timeout: timeout)
        }
        let key = PolkitCheckKey(uid: uid, session: session, action: action, details: details)
        switch cache.begin(key, now: clock.monotonicNow) {
        case .cached(let answer):
            return .success(answer)
        case .join(let ticket):
            return await withCheckedContinuation { joined[ticket.id, default: []].append($0) }
        case .send(let ticket):
            let result = await send(busName: busName, uid: uid, action: action, details: details, timeout: timeout)
            cache.finish(ticket, answer: try? result.get(), now: clock.monotonicNow)
            for waiter in joined.removeValue(forKey: ticket.id) ?? [] { waiter.resume(returning: result) }
            return result
        }
    }

    /// Sends one check about user `uid` to polkitd once its turn comes; `timeout` counts from then.
    private func send(busName: String, uid: UInt32, action: String, details: [String: String], timeout: Duration)
        async -> Result<PolkitAnswer, AuthorisationFailure>
    {
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            switch queue.admit(Waiting(uid: uid, continuation: continuation), user: uid, now: clock.monotonicNow) {
            case .send: continuation.resume(returning: .now)
            case .wait: armExpiry()
            case .refuse: continuation.resume(returning: .tooManyWaiting)
            }
        }
        switch turn {
        case .now: break
        case .waitedTooLong:
            return .failure(
                AuthorisationFailure(
                    "too many polkit checks waiting: this one was not sent within \(Self.queueTimeout.components.seconds) s"
                ))
        case .tooManyWaiting:
            return .failure(
                AuthorisationFailure(
                    "too many polkit checks waiting: UID \(uid) already has \(Self.perUserLimit) waiting",
                    limitsExceeded: true))
        }
        let result = await authoriser.check(
            busName: busName, action: action, details: details, interactive: false, timeout: timeout)
        queue.release()?.continuation.resume(returning: .now)
        return result
    }

    /// Logs `message`, a warning a caller of user `uid` caused, unless that user caused too many lately; the next
    /// line logged for the user says how many were left out.
    func warn(uid: UInt32, _ message: String) {
        guard let line = warnings.line(message, for: uid, now: clock.monotonicNow) else { return }
        logger.warning(line)
    }

    private func armExpiry() {
        guard expiryTimer == nil, let next = queue.nextExpiry else { return }
        let delay = max(.milliseconds(1), next - clock.monotonicNow)
        expiryTimer = timers.scheduleOnBus(after: delay) { [weak self] in
            guard let self else { return }
            expiryTimer = nil
            let expired = queue.expire(now: clock.monotonicNow)
            for (uid, count) in Dictionary(expired.map { ($0.uid, 1) }, uniquingKeysWith: +).sorted(by: {
                $0.key < $1.key
            }) {
                warn(
                    uid: uid,
                    "polkit: \(count) checks of UID \(uid) waited \(Self.queueTimeout.components.seconds) s for their turn; refused"
                )
            }
            for waiter in expired { waiter.continuation.resume(returning: .waitedTooLong) }
            armExpiry()
        }
    }

    // MARK: Invalidation

    /// A login session's `Active` changed, or it ended.
    func sessionChanged(id: String) { cache.sessionChanged(id: id) }

    /// A stored decision of user `uid` was set or revoked.
    func grantsChanged(uid: UInt32) { cache.grantsChanged(uid: uid) }

    /// Subscribes, once, to polkit's `Changed` and to its name changing owner; false when that failed, so that
    /// nothing is kept.
    private func follow() async -> Bool {
        if let following { return await following.value }
        let task = BusActor.task { [self] in await subscribe() }
        following = task
        let followed = await task.value
        if !followed { following = nil }
        return followed
    }

    private func subscribe() async -> Bool {
        do throws(DBusError) {
            _ = try await connection.subscribe(
                SignalMatch(
                    sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                    stringArguments: [0: Self.busName])
            ) { [weak self] message in self?.ownerChanged(message) }
            _ = try await connection.subscribe(
                SignalMatch(
                    sender: Self.busName, path: Self.authorityPath, interface: Self.authorityInterface,
                    member: "Changed")
            ) { [weak self] message in self?.authorityChanged(message) }
        } catch {
            logger.warning("polkit: cannot follow its Changed signal (\(error)); its answers are not reused")
            return false
        }
        do throws(DBusError) {
            let message = try Message.methodCall(
                destination: "org.freedesktop.DBus", path: ObjectPath("/org/freedesktop/DBus")!,
                interface: "org.freedesktop.DBus", member: "GetNameOwner", arguments: [.string(Self.busName)])
            let reply = try await connection.call(message, timeout: .seconds(5))
            if polkitOwner == nil, let owner = reply.arguments().first?.string { polkitOwner = owner }
        } catch {
            // Not running yet: NameOwnerChanged names it when it starts.
        }
        return true
    }

    private func ownerChanged(_ message: Message) {
        let arguments = message.arguments()
        guard arguments.count == 3, let owner = arguments[2].string else { return }
        polkitOwner = owner.isEmpty ? nil : owner
        cache.policyChanged()
    }

    private func authorityChanged(_ message: Message) {
        guard let sender = message.sender, sender == polkitOwner else { return }
        logger.info("polkit: its policy changed; answers are asked again")
        cache.policyChanged()
    }
}
