import Loop
import LoopScheduling
import WhereaboutsCore

/// When the next scan is due: started or stopped, the interval, and the timer.
///
/// The timer is armed when a scan round ends (``scheduleNext()``), so scans are `interval` apart from the end of
/// one to the start of the next. A new interval applies from the next arming; a shorter one also moves an armed
/// timer forward, to `interval` after it was armed (at once if that has passed).
@BusActor
final class ScanSchedule {
    /// Intervals shorter than this are raised to it: a radio cannot scan faster anyway.
    static let shortestInterval: Duration = .milliseconds(100)

    private(set) var isStarted = false
    private(set) var interval: Duration = .seconds(10)
    private let clock: any WhereaboutsCore.Clock
    private let timers: any TimerScheduler
    private var timer: ScheduledTimer?
    /// When the armed timer was armed.
    private var armedAt = MonotonicTime(nanoseconds: 0)
    /// What the timer does when it fires.
    var fire: (@BusActor () -> Void)?

    /// A schedule reading the time from `clock` and arming its timer on `timers`.
    init(clock: any WhereaboutsCore.Clock, timers: any TimerScheduler) {
        self.clock = clock
        self.timers = timers
    }

    /// Starts, or only changes the interval when already started; true when it was stopped.
    func start(interval requested: Duration) -> Bool {
        let interval = max(requested, Self.shortestInterval)
        guard isStarted else {
            isStarted = true
            self.interval = interval
            return true
        }
        let shorter = interval < self.interval
        self.interval = interval
        if shorter, timer != nil {
            let elapsed = clock.monotonicNow - armedAt
            arm(after: max(.zero, interval - elapsed))
        }
        return false
    }

    /// Stops and cancels the timer.
    func stop() {
        isStarted = false
        cancelPending()
    }

    /// Arms the timer `interval` from now, when started.
    func scheduleNext() {
        guard isStarted else { return }
        armedAt = clock.monotonicNow
        arm(after: interval)
    }

    /// Cancels the timer, if armed.
    func cancelPending() {
        if let timer { timers.cancelTimer(timer) }
        timer = nil
    }

    private func arm(after delay: Duration) {
        if let timer { timers.cancelTimer(timer) }
        timer = timers.scheduleOnBus(after: delay) { [weak self] in
            guard let self else { return }
            self.timer = nil
            self.fire?()
        }
    }
}
