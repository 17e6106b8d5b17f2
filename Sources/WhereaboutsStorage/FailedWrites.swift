import Synchronization

/// The users whose file a per-user store could not write (a full or failing disk), shared by the store and its
/// writer's thread, and the action that is told when there are some, so that nobody has to look after every write.
final class FailedWrites: Sendable {
    private struct State {
        var users: Set<UInt32> = []
        var onFailure: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    /// Notes that the file of `user` could not be written; on the writer's thread. The action
    /// ``whenWritesFail(_:)`` set is called when no user was noted before (since the last ``take()``): whoever
    /// takes them then takes the later ones too.
    func failed(_ user: UInt32) {
        let tell = state.withLock { state in
            let first = state.users.isEmpty
            state.users.insert(user)
            return first ? state.onFailure : nil
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

    /// Has `action` called on the writer's thread when a write fails and no failed user is waiting to be taken; a
    /// later call replaces the action.
    func whenWritesFail(_ action: @escaping @Sendable () -> Void) { state.withLock { $0.onFailure = action } }
}
