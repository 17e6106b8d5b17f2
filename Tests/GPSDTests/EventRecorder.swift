import Synchronization

/// What the code under test reported, in order, from whichever thread; a test waits for what it expects next.
final class EventRecorder: Sendable {
    private struct Waiter {
        let condition: @Sendable ([String]) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var events: [String] = []
        var waiters: [Waiter] = []
    }

    private let state = Mutex(State())

    /// Everything recorded so far.
    var events: [String] { state.withLock { $0.events } }

    /// Adds `event`, waking the waits it satisfies.
    func record(_ event: String) {
        let satisfied = state.withLock { state in
            state.events.append(event)
            let events = state.events
            let satisfied = state.waiters.filter { $0.condition(events) }
            state.waiters.removeAll { $0.condition(events) }
            return satisfied
        }
        for waiter in satisfied { waiter.continuation.resume() }
    }

    /// Returns once `event` has been recorded `count` times in all.
    func wait(for event: String, count: Int = 1) async {
        await withCheckedContinuation { continuation in
            let condition: @Sendable ([String]) -> Bool = { events in events.count { $0 == event } >= count }
            let met = state.withLock { state in
                if condition(state.events) { return true }
                state.waiters.append(Waiter(condition: condition, continuation: continuation))
                return false
            }
            if met { continuation.resume() }
        }
    }
}
