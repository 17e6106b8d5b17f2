import DBus
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsProviders

/// The daemon a Wi-Fi back end scans through (wpa_supplicant or NetworkManager), and what both back ends do with it
/// alike: following who owns its bus name, calling that unique name with a timeout, the scan schedule and the
/// rounds' numbers, reading the access points a list names, reporting on starting what it holds, and telling of
/// availability changes.
///
/// The back end (``WirelessBackend``) says what it follows besides the owner (``follow(_:for:)``), what it
/// does when the daemon leaves and comes, how it reads a list and begins a round, and when it is available; the
/// rounds themselves are its own.
@BusActor
final class WirelessDaemon {
    /// How the daemon is named in log lines: `wpa_supplicant`, `NetworkManager`.
    let service: String
    let logger: any Logger
    let calls: PeerCalls
    let follower: NameOwnerFollower
    let schedule: ScanSchedule
    let timers: any TimerScheduler
    /// How long a round may wait for the daemon before what it has is read and reported.
    let roundTimeout: Duration
    /// Counts loads of the daemon's devices or interfaces and its departures: what an older one began is dropped.
    var loadGeneration = 0

    /// The back end scanning through the daemon.
    weak var backend: (any WirelessBackend)?
    /// Called when the back end's ``WirelessBackend/isServiceRunning`` or ``WirelessBackend/isAvailable`` changes.
    var onAvailabilityChanged: (@BusActor () -> Void)?

    private var following: Task<Void, Never>?
    private var nextRoundID: UInt64 = 1
    private var reported: (running: Bool, available: Bool) = (false, false)

    /// How recently an access point must have been seen to be reported on starting.
    static let recentAge: Duration = .seconds(30)
    /// At most this many calls to the daemon wait for their replies at once.
    static let parallelReads = 16

    /// The daemon that owns `busName` on `connection`, called with `callTimeout`; the schedule reads the time from
    /// `clock` and arms its timers on `timers`.
    init(
        service: String, busName: String, connection: Connection, clock: any WhereaboutsCore.Clock,
        timers: any TimerScheduler, logger: any Logger, callTimeout: Duration, roundTimeout: Duration
    ) {
        self.service = service
        self.logger = logger
        self.timers = timers
        self.roundTimeout = roundTimeout
        schedule = ScanSchedule(clock: clock, timers: timers)
        calls = PeerCalls(connection: connection, service: service, timeout: callTimeout)
        follower = NameOwnerFollower(name: busName, connection: connection, timeout: callTimeout)
        schedule.fire = { [weak self] in self?.backend?.beginRound() }
        follower.onChange = { [weak self] previous in self?.ownerChanged(from: previous) }
    }

    /// The unique name of the daemon's connection; nil while it is not on the bus.
    var owner: String? { follower.owner }

    /// Starts following the daemon for `backend` (asynchronously: this returns at once): the back end's signals
    /// first (``WirelessBackend/subscribe(on:)``), then the daemon's owner, then the back end loads what the daemon
    /// has.
    func follow(_ connection: Connection, for backend: any WirelessBackend) {
        self.backend = backend
        following = BusActor.task { [self] in
            do throws(DBusError) {
                try await backend.subscribe(on: connection)
                try await follower.start()
            } catch {
                logger.warning("cannot follow \(service) on the bus: \(error)")
                return
            }
            if follower.owner == nil {
                logger.info("\(service) is not on the bus")
            } else {
                await backend.loadFromDaemon()
            }
            notifyIfChanged()
        }
    }

    /// Returns once the first look at the bus is done: whether the daemon runs, and what it has to scan with.
    func ready() async {
        await following?.value
    }

    private func ownerChanged(from previous: String?) {
        if previous != nil {
            logger.info("\(service) left the bus")
            loadGeneration += 1
            backend?.daemonLeft()
        }
        if follower.owner != nil {
            logger.info("\(service) is on the bus")
            BusActor.task { [self] in await backend?.loadFromDaemon() }
        }
        notifyIfChanged()
    }

    /// True when `message` comes from the daemon itself, not from a peer posing as it.
    func sent(_ message: Message) -> Bool {
        guard let sender = message.sender, let owner = follower.owner else { return false }
        return sender == owner
    }

    /// Calls ``onAvailabilityChanged`` when the back end's availability differs from what it last told.
    func notifyIfChanged() {
        guard let backend else { return }
        let now = (running: backend.isServiceRunning, available: backend.isAvailable)
        guard now != reported else { return }
        reported = now
        onAvailabilityChanged?()
    }

    /// Begins a load of the daemon's devices or interfaces: the owner to ask, and the load's generation, which
    /// ``loadGeneration`` must still be for the answer to be used; nil while the daemon is not on the bus.
    func beginLoad() -> (owner: String, generation: Int)? {
        guard let owner = follower.owner else { return nil }
        loadGeneration += 1
        return (owner, loadGeneration)
    }

    /// A number for a new round, never used before.
    func newRoundID() -> UInt64 {
        defer { nextRoundID += 1 }
        return nextRoundID
    }

    /// Starts the schedule, or only changes its interval when started already; on starting, reports what the
    /// daemon holds on `lists` and then begins the first round (``reportRecentThenScan(_:)``).
    func start(interval: Duration, lists: [ObjectPath]) {
        guard schedule.start(interval: interval) else { return }
        reportRecentThenScan(lists)
    }

    /// Reports the access points the back end reads on `lists` that were seen in the last ``recentAge``, then
    /// begins the first round: the lists are read before any scan of ours is asked for, so that the report is what
    /// was held, never half of our own scan.
    private func reportRecentThenScan(_ lists: [ObjectPath]) {
        guard let owner = follower.owner, !lists.isEmpty else {
            backend?.beginRound()
            return
        }
        let generation = loadGeneration
        BusActor.task { [self] in
            var union = AccessPointUnion()
            for path in lists {
                let points = await backend?.accessPoints(of: path, owner: owner) ?? []
                union.add(points.filter { ($0.age ?? Self.recentAge) < Self.recentAge })
            }
            // Nothing more once stopped, or for a daemon that has left meanwhile (its return begins a round).
            guard schedule.isStarted, generation == loadGeneration else { return }
            if !union.accessPoints.isEmpty { backend?.onScan?(union.accessPoints) }
            backend?.beginRound()
        }
    }

    /// What the objects `list` names on `path` describe, at most its ``AccessPointList/maximum``: each read with one
    /// `GetAll`, at most ``parallelReads`` at once, and turned into an access point by `parse`; one that cannot be
    /// read or parsed is left out and logged. Nil when the list itself cannot be read.
    func accessPoints(
        of path: ObjectPath, owner: String, in list: AccessPointList,
        parse: @escaping @BusActor @Sendable ([String: DBusValue]) throws(PeerFailure) -> AccessPoint
    ) async -> [AccessPoint]? {
        let value: DBusValue
        do {
            value = try await calls.property(owner, path, list.interface, list.property)
        } catch {
            logger.warning("\(error)")
            return nil
        }
        guard let paths = value.objectPaths else {
            logger.warning("\(service)'s \(list.property) of \(path) is \(value.signature), not ao")
            return nil
        }
        if paths.count > list.maximum {
            logger.warning(
                "\(path) lists \(paths.count) \(list.elements); only the first \(list.maximum) are read")
        }
        let logger = self.logger
        return await concurrently(Array(paths.prefix(list.maximum)), atMost: Self.parallelReads) { [calls] element in
            do throws(PeerFailure) {
                return try parse(try await calls.allProperties(owner, element, list.elementInterface))
            } catch {
                logger.warning("\(list.element) \(element) is left out: \(error)")
                return nil
            }
        }
    }
}
