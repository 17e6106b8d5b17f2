import Synchronization
import WhereaboutsCore

/// The users' stored decisions, loaded from a ``DurableFile`` and saved to it by a ``BackgroundWriter``.
///
/// A corrupt, oversized or unreadable file (or anything there but a regular file) is moved aside and the store
/// starts empty, failing closed: every app is then `notDetermined` until asked again, and nothing is granted that
/// was not. When it cannot be moved aside, nothing is ever saved over it.
///
/// Saving never blocks its caller. ``save(_:)`` hands the store to the writer and returns at once; the writer
/// writes the latest store handed to it, atomically and durably (``DurableFile/write(_:)``), so that stores handed
/// over while a write is in flight are coalesced into the next one. A ``Write`` tells when the store it carried (or
/// a later one) is on disk: each save waits for at most the write in flight and the next.
public final class GrantFile: Sendable {
    public let file: DurableFile
    private let ledger = Ledger()
    private let writer: BackgroundWriter<GrantStore>

    /// The writes' outcomes and the saves waiting for them, shared with the writer's callbacks.
    private final class Ledger: Sendable {
        let state = Mutex(State())
    }

    fileprivate struct State: Sendable {
        /// The last ticket whose store (or a later one) a write has finished with.
        var finished: UInt64 = 0
        /// The last failed write: the ticket whose store it carried and why it failed.
        var lastFailure: (ticket: UInt64, message: String)?
        /// Why nothing may be saved (the file could not be moved aside).
        var blocked: String?
        /// Saves waiting for their write.
        var waiters: [(ticket: UInt64, continuation: CheckedContinuation<String?, Never>)] = []
    }

    public init(path: String) {
        let file = DurableFile(path: path)
        let ledger = ledger
        self.file = file
        writer = BackgroundWriter(
            write: { store in
                if let blocked = ledger.state.withLock({ $0.blocked }) { throw WriteBlocked(reason: blocked) }
                try file.write(store.text)
            },
            finished: { ticket, failure in
                let ready: [(CheckedContinuation<String?, Never>, String?)] = ledger.state.withLock { state in
                    state.finished = ticket
                    if let failure { state.lastFailure = (ticket, failure) }
                    let (done, waiting) = state.waiters.partitioned { $0.ticket <= ticket }
                    state.waiters = waiting
                    return done.map { ($0.continuation, state.failure(for: $0.ticket)) }
                }
                for (continuation, failure) in ready { continuation.resume(returning: failure) }
            })
    }

    /// The stored decisions; `log` receives a line when the file was unusable.
    public func load(now: WallTime, log: (String) -> Void) -> GrantStore {
        file.load(
            limit: GrantStore.maximumTextSize, now: now, label: "grants",
            fallback: "starting with no stored decisions", missing: GrantStore(), unusable: GrantStore(), log: log,
            unmoved: {
                ledger.state.withLock {
                    $0.blocked = "\(file.path) could not be moved aside, so nothing is saved over it"
                }
            }
        ) { text in
            Result { () throws(GrantStoreError) in try GrantStore.parse(text, file: file.path) }
                .mapError { DurableFile.LoadProblem($0.description) }
        }
    }

    /// Waits until the stores handed over are written, for a process about to end (``BackgroundWriter/flush(timeout:)``).
    public func flush() { writer.flush() }

    /// Hands `store` to the writer and returns at once.
    public func save(_ store: GrantStore) -> Write { Write(file: self, ticket: writer.submit(store)) }

    /// One save: what its caller may wait for.
    public struct Write: Sendable {
        fileprivate let file: GrantFile
        fileprivate let ticket: UInt64

        /// Waits until the write that carries this save's store, or a later one, has ended. Returns nil when it
        /// is on disk; otherwise why not, told only to the save whose store that write carried (the latest handed
        /// over, the others' decisions being part of it), so that each failed write is reported once.
        public func ended() async -> String? {
            await withCheckedContinuation { continuation in
                let ready: String?? = file.ledger.state.withLock { state in
                    guard state.finished < ticket else { return .some(state.failure(for: ticket)) }
                    state.waiters.append((ticket, continuation))
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
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

/// Why the grants are not written: the unusable file could not be moved aside.
private struct WriteBlocked: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}
