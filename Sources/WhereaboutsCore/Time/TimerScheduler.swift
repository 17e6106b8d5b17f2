/// Runs work after a delay: the event loop in the daemon, a ``ManualClock`` in tests.
///
/// The service and the providers schedule through it, as they read the time through a ``Clock``, so that a test
/// drives their timers by moving a manual clock on. Actions run on whatever thread drives the scheduler: the event
/// loop's thread, or the thread that advances the manual clock.
public protocol TimerScheduler: AnyObject, Sendable {
    /// Runs `action` once, `delay` from now; returns what cancels it.
    @discardableResult
    func scheduleTimer(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> ScheduledTimer
    /// Cancels `timer`; one that already ran or was cancelled is ignored.
    func cancelTimer(_ timer: ScheduledTimer)
}

/// A timer ``TimerScheduler/scheduleTimer(after:_:)`` armed.
public struct ScheduledTimer: Hashable, Sendable {
    public let number: UInt64

    public init(number: UInt64) { self.number = number }
}
