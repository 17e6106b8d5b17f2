/// Calls back when a file descriptor is ready: the event loop in the daemon, a test's stand-in otherwise.
///
/// The providers watch their sockets and files through it, as they arm timers through a ``TimerScheduler``, so
/// that what they wait on is given to them rather than reached for. Actions run on whatever thread drives the
/// watcher: the event loop's thread in the daemon.
public protocol DescriptorWatcher: AnyObject, Sendable {
    /// Runs `action` whenever `descriptor` is ready for `readiness`, and when it has an error or its peer hung up,
    /// until the watch is cancelled. The caller keeps ownership of `descriptor` and must cancel the watch before
    /// closing it.
    @discardableResult
    func watchDescriptor(
        _ descriptor: Int32, for readiness: DescriptorReadiness, _ action: @escaping @Sendable () -> Void
    ) -> DescriptorWatch
    /// Cancels `watch`; its action does not run again once this returns on the watcher's thread.
    func cancelWatch(_ watch: DescriptorWatch)
}

/// What a ``DescriptorWatcher`` waits for on a descriptor.
public enum DescriptorReadiness: Sendable {
    /// Data can be read.
    case readable
    /// Data can be written without blocking (a `connect` under way has ended).
    case writable
}

/// A watch ``DescriptorWatcher/watchDescriptor(_:for:_:)`` set.
public struct DescriptorWatch: Hashable, Sendable {
    public let number: UInt64

    public init(number: UInt64) { self.number = number }
}
