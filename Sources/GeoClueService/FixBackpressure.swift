import DBus
import Loop
import WhereaboutsCore

/// Fixes handed to the service (`LocationUpdated` and `PropertiesChanged` for every client) only while the bus
/// keeps up with what the daemon sends: a ``DeliveryGate`` over libdbus's outgoing queue with the connection's
/// ``Connection/backlogLimit``, the bound above which calls wait too. A held fix goes out when the connection says
/// the bus has caught up (``Connection/holdUntilBusCatchesUp()``), ahead of the calls it held. Holding starts and
/// ends with a log line, and ``onCaughtUp`` is called when it ends (the backlog's memory is free then).
@BusActor
public final class FixBackpressure {
    private let connection: Connection
    private let logger: any Logger
    private let deliver: @BusActor (Fix) -> Void
    private var gate = DeliveryGate(limit: Connection.backlogLimit)
    /// Called when a held fix went out: the bus has taken the backlog.
    public var onCaughtUp: (@BusActor () -> Void)?

    /// Hands `connection`'s fixes to `deliver` as the bus allows.
    public init(connection: Connection, logger: any Logger, deliver: @escaping @BusActor (Fix) -> Void) {
        self.connection = connection
        self.logger = logger
        self.deliver = deliver
        connection.onBusCaughtUp = { [weak self] in self?.busCaughtUp() }
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
        connection.holdUntilBusCatchesUp()
    }

    /// Delivers the held fix once the queue has drained (``DeliveryGate/drained(queued:)``), or holds it again.
    private func busCaughtUp() {
        let replaced = gate.replaced
        guard let fix = gate.drained(queued: connection.outgoingBytes) else {
            if gate.held != nil { connection.holdUntilBusCatchesUp() }
            return
        }
        logger.notice("the bus has caught up: the newest fix is sent (\(replaced) older ones were skipped)")
        deliver(fix)
        onCaughtUp?()
    }
}
