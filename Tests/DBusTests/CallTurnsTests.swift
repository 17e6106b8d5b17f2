import Testing

@testable import DBus

@Suite("Method calls served in turn, by groups of callers")
struct CallTurnsTests {
    /// Queues `calls` of `caller`; the number refused.
    static func queue<Call>(_ calls: [Call], from caller: String, in turns: inout CallTurns<Call>) -> Int {
        calls.reduce(0) { refused, call in refused + (turns.append(call, from: caller) ? 0 : 1) }
    }

    @Test func callersTakeTurnsAndKeepTheirOrder() {
        var turns = CallTurns<String>()
        var refused = Self.queue((0..<1000).map { "flood \($0)" }, from: ":1.1", in: &turns)
        refused += Self.queue(["probe"], from: ":1.2", in: &turns)
        refused += Self.queue(["other 0", "other 1"], from: ":1.3", in: &turns)
        #expect(refused == 0)
        var served: [String] = []
        while let call = turns.next(now: 0) { served.append(call) }
        // The probe waits for one call of the flood, not a thousand.
        #expect(served.prefix(6) == ["flood 0", "probe", "other 0", "flood 1", "other 1", "flood 2"])
        #expect(served.filter { $0.hasPrefix("flood") } == (0..<1000).map { "flood \($0)" })
        #expect(turns.isEmpty && turns.count == 0)
    }

    /// The callers of one group share its turns: one user's flood from many connections makes another user's calls
    /// wait for one call of that user, not one of each of its connections. When a caller's group changes (its user
    /// became known), its next call takes those still waiting along, in their order: a caller that always has calls
    /// waiting does not stay in the group of connections not known yet.
    @Test func groupsTakeTurnsAndTheirCallersShareThem() {
        var turns = CallTurns<String>()
        var refused = 0
        for caller in ["a1", "a2", "a3"] {
            for index in 0..<3 { refused += turns.append("\(caller) \(index)", from: caller, in: "A") ? 0 : 1 }
        }
        for index in 0..<3 { refused += turns.append("b \(index)", from: "b", in: "B") ? 0 : 1 }
        var served: [String] = []
        while served.count < 6, let call = turns.next(now: 0) { served.append(call) }
        #expect(served == ["a1 0", "b 0", "a2 0", "b 1", "a3 0", "b 2"])
        // a1 still has two calls waiting in group A: a call queued for group C takes them there.
        refused += turns.append("a1 moved", from: "a1", in: "C") ? 0 : 1
        refused += turns.append("c 0", from: "c", in: "C") ? 0 : 1
        while let call = turns.next(now: 0) { served.append(call) }
        #expect(served.suffix(8) == ["a1 1", "a2 1", "c 0", "a3 1", "a1 2", "a2 2", "a1 moved", "a3 2"])
        #expect(turns.isEmpty)
        #expect(refused == 0)
    }

    /// A caller whose user became known moves the calls it has waiting to its user's turns at once, before it sends
    /// another: one that sent all its calls before it was known does not keep sharing the turns of new connections.
    @Test func aRegroupedCallerTakesItsWaitingCallsAlong() {
        var turns = CallTurns<String>()
        let floods = (1...4).map { "flood \($0)" }
        for caller in floods {
            for index in 0..<3 { _ = turns.append("\(caller) \(index)", from: caller, in: "not known") }
        }
        _ = turns.append("probe", from: "probe", in: "not known")
        let first = turns.next(now: 0)
        #expect(first == "flood 1 0")
        for caller in floods + ["nobody waiting"] { turns.regroup(caller, in: "user") }
        var served: [String] = []
        while let call = turns.next(now: 0) { served.append(call) }
        // Left among the four floods, the probe would wait for three of their calls.
        #expect(served.prefix(2).contains("probe"), "\(served)")
        for caller in floods {
            let calls = served.filter { $0.hasPrefix(caller) }
            #expect(calls == (caller == "flood 1" ? 1..<3 : 0..<3).map { "\(caller) \($0)" })
        }
    }

    @Test func theCallersOfAGroupThatLeftAreDroppedAndTheGroupsGoOn() {
        var turns = CallTurns<String>()
        for (caller, group) in [("a1", "A"), ("a2", "A"), ("b", "B")] {
            for index in 0..<2 { _ = turns.append("\(caller) \(index)", from: caller, in: group) }
        }
        let first = turns.next(now: 0)
        #expect(first == "a1 0")
        turns.dropAll(from: "a2")
        turns.dropAll(from: "a1")
        #expect(turns.count == 2)
        var served: [String] = []
        while let call = turns.next(now: 0) { served.append(call) }
        #expect(served == ["b 0", "b 1"])
    }

    /// Answers deferred while the bus was behind are let past a caller's bound, and do not count toward it.
    @Test func workPastTheLimitDoesNotCountTowardIt() {
        var turns = CallTurns<Int>()
        let bound = CallTurns<Int>.maximumPerCaller
        for answer in 1...10 { _ = turns.append(-answer, from: ":1.1", pastTheLimit: true) }
        #expect(Self.queue(Array(0...bound), from: ":1.1", in: &turns) == 1)
        for _ in 0..<10 { _ = turns.next(now: 0) }
        #expect(Self.queue([bound], from: ":1.1", in: &turns) == 1, "handing out the answers made room for calls")
        _ = turns.next(now: 0)
        #expect(Self.queue([bound], from: ":1.1", in: &turns) == 0)
    }

    @Test func aCallerPastItsBoundIsRefusedAndOthersAreNot() {
        var turns = CallTurns<Int>()
        let bound = CallTurns<Int>.maximumPerCaller
        #expect(Self.queue(Array(0...bound), from: ":1.1", in: &turns) == 1)
        #expect(Self.queue([7], from: ":1.2", in: &turns) == 0)
        _ = turns.next(now: 0)
        #expect(Self.queue([-2], from: ":1.1", in: &turns) == 0, "a served call makes room")
    }

    @Test func theCallsOfACallerThatLeftAreDroppedAndTheTurnsGoOn() {
        var turns = CallTurns<String>()
        for caller in [":1.1", ":1.2", ":1.3"] {
            _ = Self.queue((0..<3).map { "\(caller) \($0)" }, from: caller, in: &turns)
        }
        let first = turns.next(now: 0)
        let second = turns.next(now: 0)
        #expect(first == ":1.1 0" && second == ":1.2 0")
        turns.dropAll(from: ":1.1")
        #expect(turns.count == 5)
        var served: [String] = []
        while let call = turns.next(now: 0) { served.append(call) }
        #expect(served == [":1.3 0", ":1.2 1", ":1.3 1", ":1.2 2", ":1.3 2"])
    }

    @Test func aSlowedCallerIsHandedOneCallPerIntervalUntilItsTimeEndsAndOthersAreNotHeld() {
        var turns = CallTurns<String>()
        _ = Self.queue((0..<5).map { "flood \($0)" }, from: ":1.1", in: &turns)
        _ = Self.queue(["probe 0", "probe 1"], from: ":1.2", in: &turns)
        turns.slow(":1.1", interval: 10, until: 35, now: 0)
        var served: [String] = []
        while let call = turns.next(now: 0) { served.append(call) }
        // At 0 the flood has one call due, the probe all of its own.
        #expect(served == ["flood 0", "probe 0", "probe 1"])
        #expect(turns.nextDue == 10)
        #expect(turns.next(now: 9) == nil)
        #expect(turns.next(now: 10) == "flood 1" && turns.next(now: 10) == nil)
        #expect(turns.next(now: 20) == "flood 2")
        // Once its time has ended, its calls go in turn again.
        #expect(turns.next(now: 40) == "flood 3" && turns.next(now: 40) == "flood 4")
        #expect(turns.isEmpty)
    }

    /// A call handed out is let go at once, even while its caller's later calls still wait: a held call keeps its
    /// header alone, and its message must not stay alive in the queue.
    @Test func aCallHandedOutIsLetGo() {
        final class Call {}
        var turns = CallTurns<Call>()
        weak var first: Call?
        do {
            let calls = (0..<3).map { _ in Call() }
            first = calls[0]
            #expect(Self.queue(calls, from: ":1.1", in: &turns) == 0)
        }
        #expect(first != nil)
        _ = turns.next(now: 0)
        #expect(first == nil, "the first call is still kept while two wait")
        #expect(turns.count == 2)
    }
}
