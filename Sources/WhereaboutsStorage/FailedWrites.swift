import Synchronization

/// The users whose file a per-user store could not write (a full or failing disk), shared by the store and its
/// writer's thread, and who is told: the service writes those files again when it hears of a failure, rather than
/// looking after every write (which would wake an idle daemon for nothing).
final class FailedWrites: Sendable {
    private struct State {
        var users: Set<UInt32> = []
        var onFailure: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    /// Notes that the file of `user` could not be written, then tells the action ``whenWritesFail(_:)`` set; on the
    /// writer's thread.
    func failed(_ user: UInt32) {
        let tell = state.withLock { state in
            state.users.insert(user)
            return state.onFailure
        }
        tell?()
    }

    /// The users noted since the last call; they are forgotten.
    func take() -> Set<UInt32> {
        state.withLock { state in
            defer { state.users = [] }
            return state.users
        }
    }

    /// Has `action` called, on the writer's thread, after each write that failed.
    func whenWritesFail(_ action: @escaping @Sendable () -> Void) { state.withLock { $0.onFailure = action } }
}
