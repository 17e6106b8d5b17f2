import Synchronization

/// What the code under test reported, in order, from whichever thread; a test waits for what it expects next.
public final class EventRecorder: Sendable {
    private struct Waiter {
        let number: UInt64
        let condition: @Sendable ([String]) -> Bool
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var events: [String] = []
        var waiters: [Waiter] = []
        var lastWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Everything recorded so far.
    public var events: [String] { state.withLock { $0.events } }

    /// Adds `event`, waking the waits it satisfies.
    public func record(_ event: String) {
        let satisfied = state.withLock { state in
            state.events.append(event)
            let events = state.events
            let satisfied = state.waiters.filter { $0.condition(events) }
            state.waiters.removeAll { $0.condition(events) }
            return satisfied
        }
        for waiter in satisfied { waiter.continuation.resume() }
    }

    /// Returns once `event` has been recorded `count` times in all; fails after `timeout` without it, so that a
    /// test waiting for what never comes fails rather than hangs.
    public func wait(for event: String, count: Int = 1, timeout: Duration = .seconds(30)) async throws {
        let condition: @Sendable ([String]) -> Bool = { events in events.count { $0 == event } >= count }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let number: UInt64? = state.withLock { state in
                if condition(state.events) { return nil }
                state.lastWaiter += 1
                state.waiters.append(Waiter(number: state.lastWaiter, condition: condition, continuation: continuation))
                return state.lastWaiter
            }
            guard let number else { return continuation.resume() }
            Task {
                try? await Task.sleep(for: timeout)
                let expired = state.withLock { state in
                    let index = state.waiters.firstIndex { $0.number == number }
                    return index.map { state.waiters.remove(at: $0) }
                }
                expired?.continuation.resume(
                    throwing: TestEnvironmentError("\(event) was not recorded \(count) time(s) within \(timeout)"))
            }
        }
    }
}
