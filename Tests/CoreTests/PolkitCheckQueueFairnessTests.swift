import Testing
import WhereaboutsCore

/// A value the `#expect` macro can mutate through.
private final class Queue {
    var value: PolkitCheckQueue<String>
    init(_ value: PolkitCheckQueue<String>) { self.value = value }
    func admit(_ waiter: String, user: UInt32, now: MonotonicTime) -> PolkitCheckQueue<String>.Admission {
        value.admit(waiter, user: user, now: now)
    }
    func release() -> String? { value.release() }
    func expire(now: MonotonicTime) -> [String] { value.expire(now: now) }
    func waitingCount(of user: UInt32) -> Int { value.waitingCount(of: user) }
    var nextExpiry: MonotonicTime? { value.nextExpiry }
    var waitingCount: Int { value.waitingCount }
    var runningCount: Int { value.runningCount }
}

/// Fills every slot with checks of `user` and queues `count` more of them, named `prefix0`, `prefix1`, ...
private func flood(_ queue: Queue, user: UInt32, count: Int, prefix: String, now: MonotonicTime) {
    while queue.runningCount < queue.value.limit { _ = queue.admit("running", user: user, now: now) }
    for index in 0..<count { _ = queue.admit("\(prefix)\(index)", user: user, now: now) }
}

@Suite("polkit's checks wait their turn fairly between users")
struct PolkitCheckQueueFairnessTests {
    let clock = ManualClock()
    static let flooder: UInt32 = 65534
    static let other: UInt32 = 1000

    @Test func anotherUsersCheckWaitsForOneOfTheFloodsAtMost() {
        let queue = Queue(PolkitCheckQueue(limit: 16, queueTimeout: .seconds(60)))
        flood(queue, user: Self.flooder, count: 1000, prefix: "flood", now: clock.monotonicNow)
        clock.advance(by: .milliseconds(5))
        #expect(queue.admit("other", user: Self.other, now: clock.monotonicNow) == .wait)
        var sent: [String] = []
        while let next = queue.release(), next != "other" { sent.append(next) }
        #expect(sent.count <= 1, "\(sent)")
        #expect(queue.waitingCount(of: Self.flooder) >= 999)
    }

    @Test func usersTakeTurnsAndEachUsersChecksKeepTheirOrder() {
        let queue = Queue(PolkitCheckQueue(limit: 1, queueTimeout: .seconds(60)))
        #expect(queue.admit("a-running", user: 1, now: clock.monotonicNow) == .send)
        for index in 0..<4 { #expect(queue.admit("a\(index)", user: 1, now: clock.monotonicNow) == .wait) }
        for index in 0..<2 { #expect(queue.admit("b\(index)", user: 2, now: clock.monotonicNow) == .wait) }
        #expect(queue.admit("c0", user: 3, now: clock.monotonicNow) == .wait)
        var sent: [String] = []
        while let next = queue.release() { sent.append(next) }
        #expect(sent == ["a0", "b0", "c0", "a1", "b1", "a2", "a3"])
        #expect(queue.runningCount == 0 && queue.waitingCount == 0)
    }

    @Test func aUserJoiningLaterIsServedInTheCurrentRound() {
        let queue = Queue(PolkitCheckQueue(limit: 1, queueTimeout: .seconds(60)))
        _ = queue.admit("running", user: 1, now: clock.monotonicNow)
        for index in 0..<3 { _ = queue.admit("a\(index)", user: 1, now: clock.monotonicNow) }
        _ = queue.admit("b0", user: 2, now: clock.monotonicNow)
        #expect(queue.release() == "a0")
        #expect(queue.release() == "b0")
        _ = queue.admit("c0", user: 3, now: clock.monotonicNow)
        #expect(queue.release() == "a1")
        #expect(queue.release() == "c0")
        #expect(queue.release() == "a2")
    }

    @Test func oneUserIsRefusedBeyondTheirBoundAndOthersAreNot() {
        let queue = Queue(PolkitCheckQueue(limit: 16, queueTimeout: .seconds(60), perUserLimit: 1024))
        flood(queue, user: Self.flooder, count: 1024, prefix: "flood", now: clock.monotonicNow)
        #expect(queue.waitingCount(of: Self.flooder) == 1024)
        #expect(queue.admit("one too many", user: Self.flooder, now: clock.monotonicNow) == .refuse)
        #expect(queue.waitingCount(of: Self.flooder) == 1024)
        #expect(queue.admit("other", user: Self.other, now: clock.monotonicNow) == .wait)
        #expect(queue.waitingCount == 1025)
        // A slot handed out makes room for one more of the flood.
        _ = queue.release()
        #expect(queue.admit("room again", user: Self.flooder, now: clock.monotonicNow) == .wait)
    }

    @Test func eachUsersChecksExpireOnTheirOwnOldestFirst() {
        let queue = Queue(PolkitCheckQueue(limit: 1, queueTimeout: .seconds(60)))
        _ = queue.admit("running", user: 1, now: clock.monotonicNow)
        _ = queue.admit("a0", user: 1, now: clock.monotonicNow)
        clock.advance(by: .seconds(10))
        _ = queue.admit("b0", user: 2, now: clock.monotonicNow)
        clock.advance(by: .seconds(10))
        _ = queue.admit("a1", user: 1, now: clock.monotonicNow)
        #expect(queue.nextExpiry == MonotonicTime(nanoseconds: 0) + .seconds(60))
        clock.advance(by: .seconds(40))
        #expect(queue.expire(now: clock.monotonicNow) == ["a0"])
        #expect(queue.nextExpiry == MonotonicTime(nanoseconds: 0) + .seconds(70))
        clock.advance(by: .seconds(20))
        #expect(queue.expire(now: clock.monotonicNow) == ["b0", "a1"])
        #expect(queue.waitingCount == 0 && queue.nextExpiry == nil)
        #expect(queue.release() == nil)
        #expect(queue.admit("fresh", user: 2, now: clock.monotonicNow) == .send)
    }

    @Test func aRoundSurvivesUsersLeavingItByExpiry() {
        let queue = Queue(PolkitCheckQueue(limit: 1, queueTimeout: .seconds(60)))
        _ = queue.admit("running", user: 1, now: clock.monotonicNow)
        _ = queue.admit("a0", user: 1, now: clock.monotonicNow)
        clock.advance(by: .seconds(30))
        _ = queue.admit("b0", user: 2, now: clock.monotonicNow)
        _ = queue.admit("b1", user: 2, now: clock.monotonicNow)
        _ = queue.admit("c0", user: 3, now: clock.monotonicNow)
        #expect(queue.release() == "a0")
        clock.advance(by: .seconds(60))
        #expect(queue.expire(now: clock.monotonicNow) == ["b0", "b1", "c0"])
        _ = queue.admit("d0", user: 4, now: clock.monotonicNow)
        _ = queue.admit("a1", user: 1, now: clock.monotonicNow)
        #expect(queue.release() == "d0")
        #expect(queue.release() == "a1")
        #expect(queue.release() == nil)
    }
}
