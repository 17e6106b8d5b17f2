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
/// A back end says what it follows besides the owner (``follow(_:subscriptions:)``), what it does when the daemon
/// leaves and comes (``onLeft``, ``onLoad``), how it begins a round (``beginRound``) and when it is available; the
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

    /// Called when the daemon leaves the bus, after ``loadGeneration`` moved on: the back end forgets its state.
    var onLeft: (@BusActor () -> Void)?
    /// Called when the daemon is on the bus, first or again: the back end loads its devices or interfaces.
    var onLoad: (@BusActor () async -> Void)?
    /// Begins a scan round, when the back end is started and can.
    var beginRound: (@BusActor () -> Void)?
    /// Whether the daemon runs and whether the back end can scan, as it reports them.
    var availability: (@BusActor () -> (running: Bool, available: Bool))?
    /// Called when ``availability`` changes.
    var onAvailabilityChanged: (@BusActor () -> Void)?

    private var following: Task<Void, Never>?
    private var nextRoundID: UInt64 = 1
    private var reported: (running: Bool, available: Bool) = (false, false)

    /// How recently an access point must have been seen to be reported on starting.
    static let recentAge: Duration = .seconds(30)

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
        schedule.fire = { [weak self] in self?.beginRound?() }
        follower.onChange = { [weak self] previous in self?.ownerChanged(from: previous) }
    }

    /// The unique name of the daemon's connection; nil while it is not on the bus.
    var owner: String? { follower.owner }

    /// Starts following the daemon (asynchronously: this returns at once): `subscribe` subscribes to its signals
    /// first, then its owner is followed, then ``onLoad`` loads what it has.
    func follow(
        _ connection: Connection, subscribe: @escaping @BusActor (Connection) async throws(DBusError) -> Void
    ) {
        following = BusActor.task { [self] in
            do throws(DBusError) {
                try await subscribe(connection)
                try await follower.start()
            } catch {
                logger.warning("cannot follow \(service) on the bus: \(error)")
                return
            }
            if follower.owner == nil {
                logger.info("\(service) is not on the bus")
            } else {
                await onLoad?()
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
            onLeft?()
        }
        if follower.owner != nil {
            logger.info("\(service) is on the bus")
            BusActor.task { [self] in await onLoad?() }
        }
        notifyIfChanged()
    }

    /// True when `message` comes from the daemon itself, not from a peer posing as it.
    func sent(_ message: Message) -> Bool {
        guard let sender = message.sender, let owner = follower.owner else { return false }
        return sender == owner
    }

    /// Calls ``onAvailabilityChanged`` when ``availability`` differs from what it last told.
    func notifyIfChanged() {
        guard let now = availability?(), now != reported else { return }
        reported = now
        onAvailabilityChanged?()
    }

    /// A number for a new round, never used before.
    func newRoundID() -> UInt64 {
        defer { nextRoundID += 1 }
        return nextRoundID
    }

    /// Starts the schedule, or only changes its interval when started already; on starting, reports what the
    /// daemon holds and then begins the first round (``reportRecentThenScan(_:read:report:)``).
    func start(
        interval: Duration, lists: [ObjectPath],
        read: @escaping @BusActor (ObjectPath, String) async -> [AccessPoint]?,
        report: @escaping @BusActor ([AccessPoint]) -> Void
    ) {
        guard schedule.start(interval: interval) else { return }
        reportRecentThenScan(lists, read: read, report: report)
    }

    /// Reports the access points `read` finds on `lists` that were seen in the last ``recentAge``, then begins the
    /// first round: the lists are read before any scan of ours is asked for, so that the report is what was held,
    /// never half of our own scan.
    private func reportRecentThenScan(
        _ lists: [ObjectPath], read: @escaping @BusActor (ObjectPath, String) async -> [AccessPoint]?,
        report: @escaping @BusActor ([AccessPoint]) -> Void
    ) {
        guard let owner = follower.owner, !lists.isEmpty else {
            beginRound?()
            return
        }
        let generation = loadGeneration
        BusActor.task { [self] in
            var union = AccessPointUnion()
            for path in lists {
                let points = await read(path, owner) ?? []
                union.add(points.filter { ($0.age ?? Self.recentAge) < Self.recentAge })
            }
            // Nothing more once stopped, or for a daemon that has left meanwhile (its return begins a round).
            guard schedule.isStarted, generation == loadGeneration else { return }
            if !union.accessPoints.isEmpty { report(union.accessPoints) }
            beginRound?()
        }
    }

    /// What the object paths of the list property `list` (`ao`, of `interface` on `path`) describe, at most
    /// `maximum` of them: each read with one `GetAll(elementInterface)`, at most `parallelReads` at once, and
    /// turned into an access point by `parse`; one that cannot be read or parsed is left out and logged. Nil when
    /// the list itself cannot be read. `element` and `elements` name the list's elements in log lines.
    func accessPoints(
        of path: ObjectPath, owner: String, list: String, interface: String, element: String, elements: String,
        elementInterface: String, maximum: Int, parallelReads: Int,
        parse: @escaping @BusActor @Sendable ([String: DBusValue]) throws(PeerFailure) -> AccessPoint
    ) async -> [AccessPoint]? {
        let value: DBusValue
        do {
            value = try await calls.property(owner, path, interface, list)
        } catch {
            logger.warning("\(error)")
            return nil
        }
        guard let paths = value.objectPaths else {
            logger.warning("\(service)'s \(list) of \(path) is \(value.signature), not ao")
            return nil
        }
        if paths.count > maximum {
            logger.warning("\(path) lists \(paths.count) \(elements); only the first \(maximum) are read")
        }
        let logger = self.logger
        return await concurrently(Array(paths.prefix(maximum)), atMost: parallelReads) { [calls] elementPath in
            do throws(PeerFailure) {
                return try parse(try await calls.allProperties(owner, elementPath, elementInterface))
            } catch {
                logger.warning("\(element) \(elementPath) is left out: \(error)")
                return nil
            }
        }
    }
}
