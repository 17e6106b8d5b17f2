import DBus
import Loop
import WhereaboutsCore

/// A Wi-Fi back end scanning through a ``WirelessDaemon``: what the daemon asks of it.
@BusActor
protocol WirelessBackend: AnyObject {
    /// True while the daemon is on the bus.
    var isServiceRunning: Bool { get }
    /// True while the back end can scan.
    var isAvailable: Bool { get }
    /// Called with the access points of a scan.
    var onScan: (@BusActor ([AccessPoint]) -> Void)? { get }
    /// Subscribes on `connection` to the daemon's signals the back end follows.
    func subscribe(on connection: Connection) async throws(DBusError)
    /// Forgets what the daemon had, once it left the bus (after ``WirelessDaemon/loadGeneration`` moved on).
    func daemonLeft()
    /// Loads the daemon's devices or interfaces, once it is on the bus, first or again.
    func loadFromDaemon() async
    /// Begins a scan round, when started, none runs, and there is something to scan.
    func beginRound()
    /// The access points the list at `path` names now; nil when it cannot be read.
    func accessPoints(of path: ObjectPath, owner: String) async -> [AccessPoint]?
}
