import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsStorage

/// Has the users' files a store could not write (a full or failing disk) written again: told of a failure by the
/// store's writer, through the loop, it waits `delay` and hands the users that failed to `rewrite`; while writes
/// fail, so every `delay`. A write that landed arms nothing, so an idle daemon is not woken. The regions
/// (``RegionWatch``) and the history of use (``UsageHistory``) each keep one.
@BusActor
final class FailedWriteRetry {
    private let store: any FailedWriteReporting
    private let timers: any TimerScheduler
    private let delay: Duration
    private let rewrite: @BusActor (Set<UInt32>) -> Void
    /// The try again, armed when a write failed.
    private var timer: ScheduledTimer?

    /// Follows `store`'s failed writes, trying again on `timers` `delay` after one.
    init(
        store: any FailedWriteReporting, timers: any TimerScheduler, delay: Duration,
        rewrite: @escaping @BusActor (Set<UInt32>) -> Void
    ) {
        self.store = store
        self.timers = timers
        self.delay = delay
        self.rewrite = rewrite
        store.whenWritesFail { [weak self] in EventLoop.main.execute { self?.writeFailed() } }
    }

    private func writeFailed() {
        guard timer == nil else { return }
        timer = timers.scheduleOnBus(after: delay) { [weak self] in
            guard let self else { return }
            timer = nil
            let failed = store.takeFailedUsers()
            guard !failed.isEmpty else { return }
            rewrite(failed)
        }
    }
}
