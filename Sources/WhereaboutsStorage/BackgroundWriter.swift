import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Writes the latest of what it is handed on a thread of its own, so that no caller waits for a disk.
///
/// ``submit(_:)`` returns at once with a ticket (the number of submissions so far). The thread writes the latest
/// payload (or, with `combine`, what the payloads waiting add up to), one write at a time, so payloads handed over
/// while a write is in flight are coalesced into the next;
/// after each write `finished` is called on the thread with the last ticket that write covered and the failure,
/// if any. The thread runs only while there is something to write; when none can be made, the submitter writes.
public final class BackgroundWriter<Payload: Sendable>: Sendable {
    private struct State: Sendable {
        var pending: Payload?
        var submitted: UInt64 = 0
        var writing = false
    }

    private let state = Mutex(State())
    private let write: @Sendable (Payload) throws -> Void
    private let finished: @Sendable (_ ticket: UInt64, _ failure: String?) -> Void
    private let combine: @Sendable (_ waiting: Payload, _ newer: Payload) -> Payload

    /// `write` writes one payload; what it throws is the failure `finished` is told. `combine` makes one payload of
    /// one still waiting and a newer one (by default the newer replaces it).
    public init(
        write: @escaping @Sendable (Payload) throws -> Void,
        finished: @escaping @Sendable (_ ticket: UInt64, _ failure: String?) -> Void = { _, _ in },
        combine: @escaping @Sendable (_ waiting: Payload, _ newer: Payload) -> Payload = { $1 }
    ) {
        self.write = write
        self.finished = finished
        self.combine = combine
    }

    /// Hands `payload` over and returns its ticket at once.
    @discardableResult
    public func submit(_ payload: Payload) -> UInt64 {
        let (ticket, start): (UInt64, Bool) = state.withLock { state in
            state.submitted += 1
            state.pending = state.pending.map { combine($0, payload) } ?? payload
            let start = !state.writing
            state.writing = true
            return (state.submitted, start)
        }
        if start { startThread() }
        return ticket
    }

    /// Waits, blocking the caller, until nothing is pending or being written, for at most `timeout`: for a process
    /// about to end. True when everything handed over was written (or failed).
    @discardableResult
    public func flush(timeout: Duration = .seconds(5)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while state.withLock({ $0.writing }) {
            guard ContinuousClock.now < deadline else { return false }
            usleep(1000)
        }
        return true
    }

    private func startThread() {
        guard startDetachedThread({ self.drain() }) else {
            drain()
            return
        }
    }

    /// Writes the latest payload until none is pending, then ends.
    private func drain() {
        while true {
            let next: (payload: Payload, ticket: UInt64)? = state.withLock { state in
                guard let payload = state.pending else {
                    state.writing = false
                    return nil
                }
                state.pending = nil
                return (payload, state.submitted)
            }
            guard let next else { return }
            let failure: String?
            do {
                try write(next.payload)
                failure = nil
            } catch {
                failure = "\(error)"
            }
            finished(next.ticket, failure)
        }
    }
}

/// What a detached thread runs; a class, so that it can cross into the thread as one pointer.
private final class ThreadBody: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// Runs `body` on a detached thread of its own; false when no thread could be made.
private func startDetachedThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    var thread = pthread_t()
    let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    let created = pthread_create(
        &thread, nil,
        { context in
            Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
    guard created == 0 else {
        Unmanaged<ThreadBody>.fromOpaque(context).release()
        return false
    }
    pthread_detach(thread)
    return true
}
