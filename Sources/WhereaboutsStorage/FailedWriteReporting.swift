/// A store that writes each user's file on a writer thread of its own and keeps the users whose file could not be
/// written (``FailedWrites``) for whoever writes them again.
public protocol FailedWriteReporting: Sendable {
    /// The users whose file could not be written since the last call; they are forgotten.
    func takeFailedUsers() -> Set<UInt32>

    /// Has `action` called on the writer's thread when a user's file could not be written and no other failed user
    /// was waiting to be taken (``takeFailedUsers()`` names them all); a later call replaces the action.
    func whenWritesFail(_ action: @escaping @Sendable () -> Void)
}
