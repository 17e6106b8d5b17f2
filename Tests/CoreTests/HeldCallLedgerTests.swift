import Testing
import WhereaboutsCore

@Suite("Calls held unanswered: limits per connection, per user and in all")
struct HeldCallLedgerTests {
    static let limits = HeldCallLedger<String>.Limits(perConnection: 3, perUser: 5, total: 8)
    static let untilIdentified = HeldCallLedger<String>.UntilIdentified(inAll: 8, perConnection: 1)

    @Test func aConnectionIsRefusedPastItsLimitAndAdmittedAgainOnceACallIsAnswered() {
        var ledger = HeldCallLedger<String>(limits: Self.limits, untilIdentified: Self.untilIdentified)
        for _ in 0..<3 { #expect(ledger.hold(":1.1", user: 1000) == nil) }
        #expect(ledger.hold(":1.1", user: 1000) == .connection(held: 3))
        #expect(ledger.held(by: ":1.1") == 3 && ledger.held(byUser: 1000) == 3 && ledger.total == 3)
        ledger.release(":1.1")
        #expect(ledger.hold(":1.1", user: 1000) == nil)
    }

    @Test func theConnectionsOfOneUserShareItsLimit() {
        var ledger = HeldCallLedger<String>(limits: Self.limits, untilIdentified: Self.untilIdentified)
        for _ in 0..<3 { #expect(ledger.hold(":1.1", user: 1000) == nil) }
        for _ in 0..<2 { #expect(ledger.hold(":1.2", user: 1000) == nil) }
        #expect(ledger.hold(":1.2", user: 1000) == .user(1000, held: 5))
        #expect(ledger.hold(":1.3", user: 1001) == nil, "another user has a share of its own")
    }

    @Test func callsMadeBeforeTheUserWasKnownCountOnceItIs() {
        var ledger = HeldCallLedger<String>(limits: Self.limits, untilIdentified: Self.untilIdentified)
        for _ in 0..<3 { #expect(ledger.hold(":1.1", user: nil) == nil) }
        for _ in 0..<2 { #expect(ledger.hold(":1.2", user: nil) == nil) }
        #expect(ledger.held(byUser: 1000) == 0)
        ledger.identify(":1.1", as: 1000)
        ledger.identify(":1.2", as: 1000)
        #expect(ledger.held(byUser: 1000) == 5)
        #expect(ledger.hold(":1.4", user: 1000) == .user(1000, held: 5))
        ledger.release(":1.2")
        #expect(ledger.held(byUser: 1000) == 4)
    }

    @Test func newConnectionsHoldLessOnceTheyHoldTheirShareInAll() {
        let limits = HeldCallLedger<String>.Limits(perConnection: 4, perUser: 8, total: 20)
        var ledger = HeldCallLedger<String>(limits: limits, untilIdentified: .init(inAll: 6, perConnection: 2))
        for _ in 0..<4 { #expect(ledger.hold(":1.1", user: nil) == nil, "a connection's full share while few wait") }
        #expect(ledger.hold(":1.1", user: nil) == .connection(held: 4))
        for _ in 0..<2 { #expect(ledger.hold(":1.2", user: nil) == nil) }
        #expect(ledger.unidentified == 6)
        #expect(ledger.hold(":1.2", user: nil) == .connection(held: 2), "past 6 in all, 2 each")
        #expect(ledger.hold(":1.3", user: nil) == nil)
        #expect(ledger.hold(":1.3", user: nil) == nil)
        #expect(ledger.hold(":1.3", user: nil) == .connection(held: 2))
        #expect(ledger.hold(":1.4", user: 1000) == nil, "a known user's connection is not limited by them")
        ledger.identify(":1.1", as: 1001)
        #expect(ledger.unidentified == 4 && ledger.held(byUser: 1001) == 4)
        #expect(ledger.hold(":1.2", user: nil) == nil, "fewer than 6 wait again")
        ledger.release(":1.3")
        #expect(ledger.unidentified == 4 && ledger.total == 9)
    }

    @Test func theTotalLimitHoldsForEveryone() {
        var ledger = HeldCallLedger<String>(limits: Self.limits, untilIdentified: Self.untilIdentified)
        for index in 0..<8 { #expect(ledger.hold(":1.\(index)", user: UInt32(index)) == nil) }
        #expect(ledger.hold(":1.9", user: 9) == .total(held: 8))
    }

    @Test func aConnectionWithNothingHeldIsForgottenWithItsUser() {
        var ledger = HeldCallLedger<String>(limits: Self.limits, untilIdentified: Self.untilIdentified)
        #expect(ledger.hold(":1.1", user: 1000) == nil)
        ledger.release(":1.1")
        ledger.release(":1.1")
        #expect(ledger.held(by: ":1.1") == 0 && ledger.held(byUser: 1000) == 0 && ledger.total == 0)
        // A later call of the same name (never reused by a bus, but possible here) starts afresh.
        #expect(ledger.hold(":1.1", user: 1001) == nil)
        #expect(ledger.held(byUser: 1001) == 1 && ledger.held(byUser: 1000) == 0)
    }
}
