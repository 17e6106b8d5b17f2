import DBus
import Loop
import LoopScheduling
import WhereaboutsCore

/// Fixes handed to the service (`LocationUpdated` and `PropertiesChanged` for every client) only while the bus
/// keeps up with what the daemon sends: a ``DeliveryGate`` over libdbus's outgoing queue with the connection's
/// ``Connection/backlogLimit``, the bound above which calls wait too, checked every ``pollInterval`` while a fix is
/// held and whenever the connection resumes its held calls, before they are served. Holding starts and ends with a
/// log line, and ``onCaughtUp`` is called when it ends (the backlog's memory is free then).
@BusActor
public final class FixBackpressure {
    /// How often the queue is looked at while a fix is held.
    static let pollInterval: Duration = .milliseconds(20)

    private let connection: Connection
    private let logger: any Logger
    private let deliver: @BusActor (Fix) -> Void
    private var gate = DeliveryGate(limit: Connection.backlogLimit)
    private let timers: any TimerScheduler
    private var timer: ScheduledTimer?
    /// Called when a held fix went out: the bus has taken the backlog.
    public var onCaughtUp: (@BusActor () -> Void)?

    /// Hands `connection`'s fixes to `deliver` as the bus allows, looking at its queue again on `timers`, and
    /// whenever the connection has caught up after holding calls (`Connection.onBusCaughtUp`), ahead of them.
    public init(
        connection: Connection, timers: any TimerScheduler, logger: any Logger,
        deliver: @escaping @BusActor (Fix) -> Void
    ) {
        self.connection = connection
        self.timers = timers
        self.logger = logger
        self.deliver = deliver
        connection.onBusCaughtUp = { [weak self] in _ = self?.deliverHeldFixIfDrained() }
    }

    /// A new fix from the providers.
    public func offer(_ fix: Fix) {
        let holding = gate.held != nil
        if let now = gate.offer(fix, queued: connection.outgoingBytes) {
            deliver(now)
            return
        }
        if !holding {
            logger.notice(
                "the bus is not keeping up (\(connection.outgoingBytes / 1024) KiB waiting to be sent): fixes are held, the newest sent when it has caught up"
            )
        }
        armPoll()
    }

    /// Delivers the held fix once the queue has drained (``DeliveryGate/drained(queued:)``); true when it went out.
    private func deliverHeldFixIfDrained() -> Bool {
        let replaced = gate.replaced
        guard let fix = gate.drained(queued: connection.outgoingBytes) else { return false }
        logger.notice("the bus has caught up: the newest fix is sent (\(replaced) older ones were skipped)")
        deliver(fix)
        onCaughtUp?()
        return true
    }

    private func armPoll() {
        guard timer == nil else { return }
        timer = timers.scheduleOnBus(after: Self.pollInterval) { [weak self] in
            guard let self else { return }
            timer = nil
            if !deliverHeldFixIfDrained(), gate.held != nil { armPoll() }
        }
    }
}
