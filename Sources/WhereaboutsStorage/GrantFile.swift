import Synchronization
import WhereaboutsCore

#if canImport(Glibc)
    import Glibc
#endif

/// The users' stored decisions, loaded from a ``DurableFile`` and saved to it by a writer thread of its own.
///
/// A corrupt, oversized or unreadable file (or anything there but a regular file) is moved aside and the store
/// starts empty, failing closed: every app is then `notDetermined` until asked again, and nothing is granted that
/// was not. When it cannot be moved aside, nothing is ever saved over it.
///
/// Saving never blocks its caller. ``save(_:)`` hands the store to the writer and returns at once; the writer
/// writes the latest store handed to it, atomically and durably (``DurableFile/write(_:)``), one write at a time,
/// so that stores handed over while a write is in flight are coalesced into the next one. A ``Write`` tells when
/// the store it carried (or a later one) is on disk: each save waits for at most the write in flight and the
/// next. The thread runs only while there is something to write.
public final class GrantFile: Sendable {
    public let file: DurableFile
    private let state = Mutex(State())

    fileprivate struct State: Sendable {
        /// The latest store handed over and not yet being written.
        var pending: GrantStore?
        /// The number of saves so far; a save's ticket is its number.
        var saves: UInt64 = 0
        /// The last ticket whose store (or a later one) a write has finished with.
        var finished: UInt64 = 0
        /// True while the writer thread runs.
        var writing = false
        /// The last failed write: the ticket whose store it carried and why it failed.
        var lastFailure: (ticket: UInt64, message: String)?
        /// Why nothing may be saved (the file could not be moved aside).
        var blocked: String?
        /// Saves waiting for their write.
        var waiters: [(ticket: UInt64, continuation: CheckedContinuation<String?, Never>)] = []
    }

    public init(path: String) { file = DurableFile(path: path) }

    /// The stored decisions; `log` receives a line when the file was unusable.
    public func load(now: WallTime, log: (String) -> Void) -> GrantStore {
        file.load(
            limit: GrantStore.maximumTextSize, now: now, label: "grants",
            fallback: "starting with no stored decisions", missing: GrantStore(), unusable: GrantStore(), log: log,
            unmoved: {
                state.withLock {
                    $0.blocked = "\(file.path) could not be moved aside, so nothing is saved over it"
                }
            }
        ) { text in
            Result { () throws(GrantStoreError) in try GrantStore.parse(text, file: file.path) }
                .mapError { DurableFile.LoadProblem($0.description) }
        }
    }

    /// Hands `store` to the writer and returns at once.
    public func save(_ store: GrantStore) -> Write {
        let (ticket, start): (UInt64, Bool) = state.withLock { state in
            state.saves += 1
            state.pending = store
            let start = !state.writing
            state.writing = true
            return (state.saves, start)
        }
        if start { startWriter() }
        return Write(file: self, ticket: ticket)
    }

    /// One save: what its caller may wait for.
    public struct Write: Sendable {
        fileprivate let file: GrantFile
        fileprivate let ticket: UInt64

        /// Waits until the write that carries this save's store, or a later one, has ended. Returns nil when it
        /// is on disk; otherwise why not, told only to the save whose store that write carried (the latest handed
        /// over, the others' decisions being part of it), so that each failed write is reported once.
        public func ended() async -> String? {
            await withCheckedContinuation { continuation in
                let ready: String?? = file.state.withLock { state in
                    guard state.finished < ticket else { return .some(state.failure(for: ticket)) }
                    state.waiters.append((ticket, continuation))
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }

    /// Runs ``drain()`` on a thread of its own; when no thread can be made, on the caller's.
    private func startWriter() {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<GrantFile>.fromOpaque(context!).takeRetainedValue().drain()
                return nil
            }, context)
        if created == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<GrantFile>.fromOpaque(context).release()
            drain()
        }
    }

    /// Writes the latest store until none is pending, then ends.
    private func drain() {
        while true {
            let next: (store: GrantStore, ticket: UInt64, blocked: String?)? = state.withLock { state in
                guard let store = state.pending else {
                    state.writing = false
                    return nil
                }
                state.pending = nil
                return (store, state.saves, state.blocked)
            }
            guard let next else { return }
            var failure = next.blocked
            if failure == nil {
                do {
                    try file.write(next.store.text)
                } catch {
                    failure = error.description
                }
            }
            let ready: [(CheckedContinuation<String?, Never>, String?)] = state.withLock { state in
                state.finished = next.ticket
                if let failure { state.lastFailure = (next.ticket, failure) }
                let (done, waiting) = state.waiters.partitioned { $0.ticket <= next.ticket }
                state.waiters = waiting
                return done.map { ($0.continuation, state.failure(for: $0.ticket)) }
            }
            for (continuation, failure) in ready { continuation.resume(returning: failure) }
        }
    }
}

extension GrantFile.State {
    /// The failure to report to the save with `ticket`, once its write ended.
    fileprivate func failure(for ticket: UInt64) -> String? {
        lastFailure.flatMap { $0.ticket == ticket ? $0.message : nil }
    }
}

extension Array {
    /// The elements that satisfy `belongs`, and the others, each in their order.
    fileprivate func partitioned(_ belongs: (Element) -> Bool) -> ([Element], [Element]) {
        var yes: [Element] = []
        var no: [Element] = []
        for element in self {
            if belongs(element) { yes.append(element) } else { no.append(element) }
        }
        return (yes, no)
    }
}
