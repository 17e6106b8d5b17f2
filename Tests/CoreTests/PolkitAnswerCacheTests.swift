import Testing
import WhereaboutsCore

private let always = "io.github.whereabouts1.location-always"
private let whenInUse = "io.github.whereabouts1.location-when-in-use"

private func key(
    uid: UInt32 = 65534, session: PolkitSessionKey = .session(id: "/org/freedesktop/login1/session/c1", active: true),
    action: String = always, app: String = "org.example.Navigator"
) -> PolkitCheckKey {
    PolkitCheckKey(
        uid: uid, session: session, action: action, details: ["app": app, "accuracy": "8", "grant": "always"])
}

/// Sends the check for `key` and completes it with `answer`; fails the test when it was not sent.
private func answer(
    _ cache: inout PolkitAnswerCache, _ key: PolkitCheckKey, _ answer: PolkitAnswer?, clock: ManualClock
) {
    guard case .send(let ticket) = cache.begin(key, now: clock.monotonicNow) else {
        Issue.record("the check was not sent")
        return
    }
    cache.finish(ticket, answer: answer, now: clock.monotonicNow)
}

/// A value the `#expect` macro can mutate through.
private final class Box<Value> {
    var value: Value
    init(_ value: Value) { self.value = value }
}

extension Box where Value == PolkitAnswerCache {
    func begin(_ key: PolkitCheckKey, now: MonotonicTime) -> PolkitAnswerCache.Begin { value.begin(key, now: now) }
    func finish(_ ticket: PolkitAnswerCache.Ticket, answer: PolkitAnswer?, now: MonotonicTime) -> Bool {
        value.finish(ticket, answer: answer, now: now)
    }
    func answer(for key: PolkitCheckKey, now: MonotonicTime) -> PolkitAnswer? { value.answer(for: key, now: now) }
    func isCurrent(_ ticket: PolkitAnswerCache.Ticket) -> Bool { value.isCurrent(ticket) }
    func policyChanged() { value.policyChanged() }
    func sessionChanged(id: String) { value.sessionChanged(id: id) }
    func grantsChanged(uid: UInt32) { value.grantsChanged(uid: uid) }
    var count: Int { value.count }
    var inFlightCount: Int { value.inFlightCount }
}

extension Box where Value == PolkitCheckQueue<Int> {
    /// Checks of one user: true when `waiter` may be sent now, false when it was queued.
    func admit(_ waiter: Int, now: MonotonicTime) -> Bool { value.admit(waiter, user: 0, now: now) == .send }
    func release() -> Int? { value.release() }
    func expire(now: MonotonicTime) -> [Int] { value.expire(now: now) }
    var nextExpiry: MonotonicTime? { value.nextExpiry }
    var runningCount: Int { value.runningCount }
    var waitingCount: Int { value.waitingCount }
}

@Suite("polkit's answers reused while they hold")
struct PolkitAnswerCacheTests {
    let clock = ManualClock()

    @Test func anAnswerIsReusedForTheSameKeyOnly() {
        let cache = Box(PolkitAnswerCache())
        answer(&cache.value, key(), .yes, clock: clock)
        #expect(cache.begin(key(), now: clock.monotonicNow) == .cached(.yes))
        for other in [
            key(uid: 1000), key(session: .session(id: "/org/freedesktop/login1/session/c1", active: false)),
            key(session: .session(id: "/org/freedesktop/login1/session/c2", active: true)), key(session: .none),
            key(session: .unknown), key(action: whenInUse), key(app: "org.example.Other"),
        ] {
            guard case .send = cache.begin(other, now: clock.monotonicNow) else {
                Issue.record("\(other) was answered without polkit")
                continue
            }
        }
    }

    @Test func challengeAndNoAreKeptAsTheyAreAndFailuresAreNot() {
        let cache = Box(PolkitAnswerCache())
        answer(&cache.value, key(action: always), .challenge, clock: clock)
        answer(&cache.value, key(action: whenInUse), .no, clock: clock)
        answer(&cache.value, key(app: "org.example.Failed"), nil, clock: clock)
        #expect(cache.begin(key(action: always), now: clock.monotonicNow) == .cached(.challenge))
        #expect(cache.begin(key(action: whenInUse), now: clock.monotonicNow) == .cached(.no))
        guard case .send = cache.begin(key(app: "org.example.Failed"), now: clock.monotonicNow) else {
            Issue.record("a failure was kept")
            return
        }
    }

    @Test func anAnswerExpiresAtTheMaximumAge() {
        let cache = Box(PolkitAnswerCache())
        answer(&cache.value, key(), .yes, clock: clock)
        clock.advance(by: PolkitAnswerCache.maximumAge - .milliseconds(1))
        #expect(cache.answer(for: key(), now: clock.monotonicNow) == .yes)
        clock.advance(by: .milliseconds(1))
        #expect(cache.answer(for: key(), now: clock.monotonicNow) == nil)
        #expect(cache.count == 0)
    }

    @Test func polkitsChangedForgetsEverything() {
        let cache = Box(PolkitAnswerCache())
        answer(&cache.value, key(), .yes, clock: clock)
        answer(&cache.value, key(uid: 1000), .no, clock: clock)
        cache.policyChanged()
        #expect(cache.answer(for: key(), now: clock.monotonicNow) == nil)
        #expect(cache.answer(for: key(uid: 1000), now: clock.monotonicNow) == nil)
    }

    @Test func aSessionChangeForgetsThatSessionsAnswersOnly() {
        let cache = Box(PolkitAnswerCache())
        let c2 = PolkitSessionKey.session(id: "/org/freedesktop/login1/session/c2", active: true)
        answer(&cache.value, key(), .yes, clock: clock)
        answer(&cache.value, key(session: c2), .yes, clock: clock)
        answer(&cache.value, key(session: .none), .no, clock: clock)
        cache.sessionChanged(id: "/org/freedesktop/login1/session/c1")
        #expect(cache.answer(for: key(), now: clock.monotonicNow) == nil)
        #expect(cache.answer(for: key(session: c2), now: clock.monotonicNow) == .yes)
        #expect(cache.answer(for: key(session: .none), now: clock.monotonicNow) == .no)
    }

    @Test func aGrantChangeForgetsThatUsersAnswersOnly() {
        let cache = Box(PolkitAnswerCache())
        answer(&cache.value, key(uid: 1000), .challenge, clock: clock)
        answer(&cache.value, key(uid: 1001), .challenge, clock: clock)
        cache.grantsChanged(uid: 1000)
        #expect(cache.answer(for: key(uid: 1000), now: clock.monotonicNow) == nil)
        #expect(cache.answer(for: key(uid: 1001), now: clock.monotonicNow) == .challenge)
    }

    @Test func identicalChecksInFlightAreOne() {
        let cache = Box(PolkitAnswerCache())
        guard case .send(let ticket) = cache.begin(key(), now: clock.monotonicNow) else {
            Issue.record("the first check was not sent")
            return
        }
        #expect(cache.begin(key(), now: clock.monotonicNow) == .join(ticket))
        #expect(cache.begin(key(), now: clock.monotonicNow) == .join(ticket))
        guard case .send(let other) = cache.begin(key(action: whenInUse), now: clock.monotonicNow) else {
            Issue.record("a different check joined")
            return
        }
        #expect(other != ticket)
        #expect(cache.inFlightCount == 2)
        #expect(cache.finish(ticket, answer: .yes, now: clock.monotonicNow))
        #expect(cache.inFlightCount == 1)
        #expect(cache.begin(key(), now: clock.monotonicNow) == .cached(.yes))
    }

    @Test func aCheckInFlightDuringAnInvalidationIsNeitherJoinedNorKept() {
        for invalidate: (inout PolkitAnswerCache) -> Void in [
            { $0.policyChanged() }, { $0.sessionChanged(id: "/org/freedesktop/login1/session/c1") },
            { $0.grantsChanged(uid: 65534) },
        ] {
            let cache = Box(PolkitAnswerCache())
            guard case .send(let stale) = cache.begin(key(), now: clock.monotonicNow) else {
                Issue.record("the first check was not sent")
                continue
            }
            invalidate(&cache.value)
            #expect(!cache.isCurrent(stale))
            guard case .send(let fresh) = cache.begin(key(), now: clock.monotonicNow) else {
                Issue.record("a check after the invalidation joined the stale one")
                continue
            }
            #expect(!cache.finish(stale, answer: .yes, now: clock.monotonicNow))
            #expect(cache.begin(key(), now: clock.monotonicNow) == .join(fresh))
            #expect(cache.finish(fresh, answer: .no, now: clock.monotonicNow))
            #expect(cache.begin(key(), now: clock.monotonicNow) == .cached(.no))
        }
    }

    @Test func aFullCacheDropsExpiredAnswersFirstThenEverything() {
        let cache = Box(PolkitAnswerCache(capacity: 2))
        answer(&cache.value, key(uid: 1), .yes, clock: clock)
        clock.advance(by: .seconds(61))
        answer(&cache.value, key(uid: 2), .yes, clock: clock)
        answer(&cache.value, key(uid: 3), .yes, clock: clock)
        #expect(cache.count == 2)
        #expect(cache.answer(for: key(uid: 2), now: clock.monotonicNow) == .yes)
        answer(&cache.value, key(uid: 4), .yes, clock: clock)
        #expect(cache.count == 1)
        #expect(cache.answer(for: key(uid: 4), now: clock.monotonicNow) == .yes)
    }
}

@Suite("At most N polkit checks at once, the rest in order")
struct PolkitCheckQueueTests {
    let clock = ManualClock()

    @Test func checksBeyondTheLimitWaitInOrder() {
        let queue = Box(PolkitCheckQueue<Int>(limit: 2, queueTimeout: .seconds(60)))
        #expect(queue.admit(1, now: clock.monotonicNow))
        #expect(queue.admit(2, now: clock.monotonicNow))
        #expect(!queue.admit(3, now: clock.monotonicNow))
        #expect(!queue.admit(4, now: clock.monotonicNow))
        #expect(queue.runningCount == 2 && queue.waitingCount == 2)
        #expect(queue.release() == 3)
        #expect(queue.release() == 4)
        #expect(queue.runningCount == 2 && queue.waitingCount == 0)
        #expect(queue.release() == nil)
        #expect(queue.release() == nil)
        #expect(queue.runningCount == 0)
        #expect(queue.admit(5, now: clock.monotonicNow))
    }

    @Test func aNewCheckDoesNotOvertakeWaitingOnes() {
        let queue = Box(PolkitCheckQueue<Int>(limit: 1, queueTimeout: .seconds(60)))
        #expect(queue.admit(1, now: clock.monotonicNow))
        #expect(!queue.admit(2, now: clock.monotonicNow))
        #expect(queue.release() == 2)
        #expect(!queue.admit(3, now: clock.monotonicNow))
    }

    @Test func waitingChecksExpireAfterTheQueueTimeoutOnly() {
        let queue = Box(PolkitCheckQueue<Int>(limit: 1, queueTimeout: .seconds(60)))
        #expect(queue.admit(1, now: clock.monotonicNow))
        #expect(!queue.admit(2, now: clock.monotonicNow))
        clock.advance(by: .seconds(30))
        #expect(!queue.admit(3, now: clock.monotonicNow))
        #expect(queue.nextExpiry == MonotonicTime(nanoseconds: 0) + .seconds(60))
        clock.advance(by: .seconds(29))
        #expect(queue.expire(now: clock.monotonicNow).isEmpty)
        clock.advance(by: .seconds(1))
        #expect(queue.expire(now: clock.monotonicNow) == [2])
        #expect(queue.waitingCount == 1)
        #expect(queue.release() == 3)
        #expect(queue.nextExpiry == nil)
    }

    @Test func aLongQueueKeepsItsOrder() {
        let queue = Box(PolkitCheckQueue<Int>(limit: 16, queueTimeout: .seconds(60)))
        for waiter in 0..<1000 { _ = queue.admit(waiter, now: clock.monotonicNow) }
        var sent: [Int] = []
        while let next = queue.release() { sent.append(next) }
        #expect(sent == Array(16..<1000))
        #expect(queue.runningCount == 15)
    }
}

@Suite("The when-in-use check is made only when it can change the status")
struct WhenInUseCheckTests {
    @Test func alwaysYesOrAMetChallengeDecidesAlone() {
        #expect(!AuthorisationRule.needsWhenInUse(always: .yes, stored: nil, configuration: .askAgent))
        #expect(!AuthorisationRule.needsWhenInUse(always: .no, stored: nil, configuration: .disallowed))
        #expect(!AuthorisationRule.needsWhenInUse(always: .challenge, stored: nil, configuration: .allowed))
        #expect(
            !AuthorisationRule.needsWhenInUse(
                always: .challenge, stored: .granted(.always, approximate: false), configuration: .askAgent))
        #expect(
            AuthorisationRule.needsWhenInUse(
                always: .challenge, stored: .granted(.whenInUse, approximate: false), configuration: .askAgent))
        #expect(AuthorisationRule.needsWhenInUse(always: .no, stored: nil, configuration: .askAgent))
        #expect(AuthorisationRule.needsWhenInUse(always: .challenge, stored: .denied, configuration: .askAgent))
    }

    /// Whatever polkit would say for when in use, a status decided without asking it is the same.
    @Test func skippingTheCheckNeverChangesTheStatus() {
        let answers: [PolkitAnswer] = [.yes, .no, .challenge]
        let stored: [StoredDecision?] = [
            nil, .denied, .granted(.always, approximate: false), .granted(.whenInUse, approximate: true),
        ]
        for always in answers {
            for decision in stored {
                for configuration in [AppPermission.allowed, .disallowed, .askAgent] {
                    guard
                        !AuthorisationRule.needsWhenInUse(
                            always: always, stored: decision, configuration: configuration)
                    else { continue }
                    let statuses = Set(
                        answers.map {
                            AuthorisationRule.status(
                                always: always, whenInUse: $0, stored: decision, configuration: configuration)
                        })
                    #expect(statuses.count == 1, "\(always) \(String(describing: decision)) \(configuration)")
                }
            }
        }
    }
}
