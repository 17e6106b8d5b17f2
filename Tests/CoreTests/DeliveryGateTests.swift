import Testing
import WhereaboutsCore

/// A fix at `latitude`, with a timestamp as far into 2023 as its number.
private func fix(_ latitude: Double) -> Fix {
    Fix(
        latitude: latitude, longitude: 11.5, horizontalAccuracy: 5,
        timestamp: WallTime(microseconds: 1_700_000_000_000_000 + Int64(latitude * 1000)), provider: .replay,
        description: "test")
}

@Suite("Fixes held while the bus is behind")
struct DeliveryGateTests {
    @Test func aFixGoesOutAtOnceWhileTheQueueIsWithinTheLimit() {
        var gate = DeliveryGate(limit: 1000)
        #expect(gate.offer(fix(1), queued: 0) == fix(1))
        #expect(gate.offer(fix(2), queued: 1000) == fix(2))
        #expect(gate.held == nil)
    }

    @Test func aFixIsHeldAboveTheLimitAndOnlyTheNewestIsKept() {
        var gate = DeliveryGate(limit: 1000)
        #expect(gate.offer(fix(1), queued: 1001) == nil)
        #expect(gate.offer(fix(2), queued: 900) == nil, "while one is held, a newer one waits too, so order holds")
        #expect(gate.offer(fix(3), queued: 5000) == nil)
        #expect(gate.held == fix(3))
        #expect(gate.replaced == 2)
    }

    @Test func theHeldFixGoesOutOnceTheQueueFellToHalfTheLimit() {
        var gate = DeliveryGate(limit: 1000)
        _ = gate.offer(fix(1), queued: 2000)
        #expect(gate.drained(queued: 501) == nil)
        #expect(gate.held == fix(1))
        #expect(gate.drained(queued: 500) == fix(1))
        #expect(gate.held == nil)
        #expect(gate.replaced == 0)
        #expect(gate.drained(queued: 0) == nil, "nothing is sent twice")
        #expect(gate.offer(fix(2), queued: 0) == fix(2))
    }
}
