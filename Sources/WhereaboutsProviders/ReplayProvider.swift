import Loop
import LoopScheduling
import WhereaboutsCore

/// Plays a recorded NMEA log or GPX track as a source of fixes, in real time or faster: the `[replay]` source,
/// and the simulations `io.github.whereabouts1.Manager.Simulate` runs.
///
/// Every fix it produces is marked simulated and timestamped at playback time. The `[replay]` track loops; a
/// simulation may play once. A file that cannot be read or parsed is logged and leaves the provider unavailable.
@BusActor
public final class ReplayProvider: LocationProvider {
    public let kind = ProviderKind.replay
    public let minimumClientLevel = AccuracyLevel.country
    public var onFix: (@BusActor (Fix) -> Void)?
    public var onAvailabilityChanged: (@BusActor () -> Void)?
    /// Called once when a track that does not loop has played its last fix.
    public var onFinished: (@BusActor () -> Void)?

    private let schedule: ReplaySchedule?
    private let loops: Bool
    private let clock: any WhereaboutsCore.Clock
    private let timers: any TimerScheduler
    private var timer: ScheduledTimer?
    private var startedAt: (wall: WallTime, monotonic: MonotonicTime)?
    private var position = (index: 0, loop: 0)

    /// Plays `schedule`, once or, when `loops`, again and again.
    public init(schedule: ReplaySchedule, loops: Bool, clock: any WhereaboutsCore.Clock, timers: any TimerScheduler) {
        self.schedule = schedule
        self.loops = loops
        self.clock = clock
        self.timers = timers
    }

    /// The `[replay]` source: the track at `path`, looping.
    public init(
        path: String, speed: Double, clock: any WhereaboutsCore.Clock, timers: any TimerScheduler, logger: any Logger
    ) {
        self.clock = clock
        self.timers = timers
        loops = true
        var schedule: ReplaySchedule?
        do {
            let text = try readTextFile(path)
            let fileName = String(path.split(separator: "/").last ?? Substring(path))
            let track = try Track.parse(text: text, fileName: fileName)
            schedule = try ReplaySchedule(track: track, speed: speed)
            logger.info("replay source: \(track.fixes.count) fixes from \(path) at \(speed)× speed")
        } catch let error as FileReadError {
            logger.warning("replay source: cannot read \(error); no replayed location")
        } catch {
            logger.warning("replay source: \(path): \(error); no replayed location")
        }
        self.schedule = schedule
    }

    public var availableLevel: AccuracyLevel { schedule == nil ? .none : .exact }

    public func start() {
        guard schedule != nil, timer == nil else { return }
        startedAt = (clock.wallNow, clock.monotonicNow)
        position = (0, 0)
        playDue()
    }

    public func stop() {
        if let timer { timers.cancelTimer(timer) }
        timer = nil
        startedAt = nil
    }

    /// Emits the latest fix that is due and sleeps until the next one.
    private func playDue() {
        guard let schedule, let startedAt else { return }
        let elapsed = clock.monotonicNow - startedAt.monotonic
        let due = schedule.latestDue(at: elapsed)
        if (due.loop, due.index) >= (position.loop, position.index) {
            onFix?(schedule.fix(at: due.index, loop: due.loop, startedAt: startedAt.wall))
            position = due.index + 1 < schedule.track.fixes.count ? (due.index + 1, due.loop) : (0, due.loop + 1)
        }
        if !loops && position.loop > 0 {
            stop()
            onFinished?()
            return
        }
        let wait = schedule.offset(at: position.index, loop: position.loop) - elapsed
        timer = timers.scheduleOnBus(after: wait) { [weak self] in
            self?.timer = nil
            self?.playDue()
        }
    }
}
