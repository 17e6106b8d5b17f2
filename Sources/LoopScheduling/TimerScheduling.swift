import Loop
import WhereaboutsCore

/// The event loop as the service's and the providers' ``TimerScheduler``: actions run on the loop thread.
extension EventLoop: TimerScheduler {
    @discardableResult
    public func scheduleTimer(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> ScheduledTimer {
        let id: TimerID = schedule(after: delay, handler: { action() })
        return ScheduledTimer(number: id.raw)
    }

    public func cancelTimer(_ timer: ScheduledTimer) { cancel(TimerID(raw: timer.number)) }
}

extension TimerScheduler {
    /// Runs `action` as `@BusActor` code once, `delay` from now. The scheduler must run its actions on the loop
    /// thread: the event loop does, and a manual clock must be advanced from `@BusActor` code.
    @discardableResult
    public func scheduleOnBus(after delay: Duration, _ action: @escaping @BusActor @Sendable () -> Void)
        -> ScheduledTimer
    {
        scheduleTimer(after: delay) { BusActor.assumeIsolated(action) }
    }
}
