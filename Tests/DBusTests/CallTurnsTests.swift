import Testing
@testable import DBus

@Suite("Method calls served one caller at a time in turn")
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
        while let call = turns.next() { served.append(call) }
        // The probe waits for one call of the flood, not a thousand.
        #expect(served.prefix(6) == ["flood 0", "probe", "other 0", "flood 1", "other 1", "flood 2"])
        #expect(served.filter { $0.hasPrefix("flood") } == (0..<1000).map { "flood \($0)" })
        #expect(turns.isEmpty && turns.count == 0)
    }

    @Test func aCallerPastItsBoundIsRefusedAndOthersAreNot() {
        var turns = CallTurns<Int>()
        let bound = CallTurns<Int>.maximumPerCaller
        #expect(Self.queue(Array(0...bound), from: ":1.1", in: &turns) == 1)
        #expect(Self.queue([7], from: ":1.2", in: &turns) == 0)
        _ = turns.next()
        #expect(Self.queue([-2], from: ":1.1", in: &turns) == 0, "a served call makes room")
    }

    @Test func theCallsOfACallerThatLeftAreDroppedAndTheTurnsGoOn() {
        var turns = CallTurns<String>()
        for caller in [":1.1", ":1.2", ":1.3"] {
            _ = Self.queue((0..<3).map { "\(caller) \($0)" }, from: caller, in: &turns)
        }
        let first = turns.next()
        let second = turns.next()
        #expect(first == ":1.1 0" && second == ":1.2 0")
        turns.dropAll(from: ":1.1")
        #expect(turns.count == 5)
        var served: [String] = []
        while let call = turns.next() { served.append(call) }
        #expect(served == [":1.3 0", ":1.2 1", ":1.3 1", ":1.2 2", ":1.3 2"])
    }
}
