import DBus
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsProviders

/// Wi-Fi scans from wpa_supplicant's D-Bus API (`fi.w1.wpa_supplicant1`), on every wireless interface it manages.
///
/// **Following.** From the moment it is made, the scanner follows wpa_supplicant on the bus: who owns
/// `fi.w1.wpa_supplicant1` (`GetNameOwner`, then `NameOwnerChanged`), its `Interfaces` (`ao` on
/// `/fi/w1/wpa_supplicant1`) and the `InterfaceAdded` / `InterfaceRemoved` signals there. wpa_supplicant is
/// D-Bus activatable on Debian, so the scanner never calls it by its well-known name: every call goes to the
/// unique name of the current owner, which the bus cannot activate, and nothing is called while the name has no
/// owner. Signals count only when they come from that unique name.
///
/// P2P device interfaces (`Ifname` `p2p-dev-*`, which wpa_supplicant adds next to a radio that supports
/// Wi-Fi Direct) are left out: they have no access points, and one that took a scan would hold every round up.
///
/// **Scanning.** Between ``start(interval:)`` and ``stop()`` it runs scan rounds. A round asks every interface
/// for `Scan({"Type": <"passive">})` (`fi.w1.wpa_supplicant1.Interface`); an interface that refuses (a scan of
/// its own already running gives `fi.w1.wpa_supplicant1.Interface.ScanError`) is left out of that round, logged
/// at debug level. When an interface emits `ScanDone(b)` its `BSSs` (`ao`) are read, and each BSS's properties
/// with one `GetAll("fi.w1.wpa_supplicant1.BSS")` (`BSSID ay`, `SSID ay`, `Signal n`, `Frequency q`, `Age u`).
/// Once every interface asked has reported, or after the round timeout, ``onScan`` gets the union of their
/// access points, each BSSID once (the strongest sighting); a round in which no interface reported calls
/// nothing. The next round is due `interval` after a round ends.
///
/// A `ScanDone` outside a round (someone else asked for the scan, or wpa_supplicant scanned by itself) is used
/// too while started: every interface's list is read and reported, and the next round is due `interval` after
/// that. An interface that appears while started, or wpa_supplicant coming back, starts a round at once when
/// none is running. A BSS whose properties have the wrong type or size is left out, and logged; a reply of the
/// wrong shape is a failure logged, never a crash. Every call has a timeout (``callTimeout``).
@BusActor
public final class WPASupplicantScanner: AccessPointScanner {
    /// wpa_supplicant's well-known bus name.
    public static let busName = "fi.w1.wpa_supplicant1"
    /// The root object, with `Interfaces` and the interface signals.
    public static let rootPath = ObjectPath("/fi/w1/wpa_supplicant1")!
    static let rootInterface = "fi.w1.wpa_supplicant1"
    static let interfaceInterface = "fi.w1.wpa_supplicant1.Interface"
    static let bssInterface = "fi.w1.wpa_supplicant1.BSS"
    /// How long one call to wpa_supplicant may take.
    public static let callTimeout: Duration = .seconds(5)
    /// At most this many BSSs of one interface are read per scan (wpa_supplicant keeps 200 by default).
    static let maximumBSSs = 512
    /// At most this many `GetAll` calls wait for their replies at once.
    static let parallelReads = 16

    /// `wpa_supplicant`.
    public let backend = "wpa_supplicant"
    /// True while wpa_supplicant is on the bus and manages at least one interface.
    public var isAvailable: Bool { daemon.owner != nil && !known.isEmpty }
    /// True while some connection owns `fi.w1.wpa_supplicant1`.
    public var isServiceRunning: Bool { daemon.owner != nil }
    /// The object paths of the interfaces wpa_supplicant manages and that are scanned (all but P2P devices), in
    /// the order they became known.
    public var interfaces: [ObjectPath] { known }
    /// Called after each scan round with the access points of every interface that reported.
    public var onScan: (@BusActor ([AccessPoint]) -> Void)?
    /// Called when ``isAvailable`` or ``isServiceRunning`` changes.
    public var onAvailabilityChanged: (@BusActor () -> Void)? {
        get { daemon.onAvailabilityChanged }
        set { daemon.onAvailabilityChanged = newValue }
    }

    private let daemon: WirelessDaemon
    private var logger: any Logger { daemon.logger }
    private var schedule: ScanSchedule { daemon.schedule }
    private var timers: any TimerScheduler { daemon.timers }

    private var known: [ObjectPath] = []
    /// Interfaces left out: P2P devices (`p2p-dev-*`), which have no access points to scan for.
    private var p2pDevices: Set<ObjectPath> = []
    /// Interfaces whose `Ifname` is being read; one removed meanwhile is dropped from here and not added.
    private var examining: Set<ObjectPath> = []
    /// Interfaces added and removed by signals while `Interfaces` is being read, whose answer may predate them.
    private var changesDuringLoad: (added: Set<ObjectPath>, removed: Set<ObjectPath>)?

    /// A scan round: the interfaces asked that have not reported, those being read, and what was read.
    private struct Round {
        let id: UInt64
        var waiting: Set<ObjectPath>
        var reading: Set<ObjectPath> = []
        var results: [ObjectPath: [AccessPoint]] = [:]
        var timeout: ScheduledTimer?
    }
    private var round: Round?

    /// Starts following wpa_supplicant on `connection` (asynchronously: this returns at once), reading the time from
    /// `clock` and arming timers on `timers`. A scan round reports after `roundTimeout` at the latest.
    public init(
        connection: Connection, clock: any WhereaboutsCore.Clock, timers: any TimerScheduler, logger: any Logger,
        roundTimeout: Duration = .seconds(5)
    ) {
        daemon = WirelessDaemon(
            service: "wpa_supplicant", busName: Self.busName, connection: connection, clock: clock, timers: timers,
            logger: logger, callTimeout: Self.callTimeout, roundTimeout: roundTimeout)
        daemon.onLeft = { [weak self] in self?.forgetInterfaces() }
        daemon.onLoad = { [weak self] in await self?.loadInterfaces() }
        daemon.beginRound = { [weak self] in self?.beginRound() }
        daemon.availability = { [weak self] in (self?.isServiceRunning ?? false, self?.isAvailable ?? false) }
        daemon.follow(connection) { [weak self] connection throws(DBusError) in
            _ = try await connection.subscribe(
                SignalMatch(sender: Self.busName, path: Self.rootPath, interface: Self.rootInterface)
            ) { [weak self] message in self?.rootSignal(message) }
            _ = try await connection.subscribe(
                SignalMatch(sender: Self.busName, interface: Self.interfaceInterface, member: "ScanDone")
            ) { [weak self] message in self?.scanDone(message) }
        }
    }

    /// Returns once the first look at the bus is done: whether wpa_supplicant runs, and its interfaces.
    public func ready() async {
        await daemon.ready()
    }

    /// Scans now (unless a round is running), then every `interval`, until ``stop()``. When started already it
    /// only changes the interval: from the next scan, or sooner when the new interval is shorter.
    ///
    /// On starting, what wpa_supplicant already holds from scans of the last ``recentAge`` (its own, or another
    /// client's) is reported at once, before the first scan of ours ends: a passive scan takes seconds, and a
    /// known place is then located from the cache without waiting for it.
    public func start(interval: Duration) {
        daemon.start(
            interval: interval, lists: known, read: { [weak self] in await self?.accessPoints(of: $0, owner: $1) },
            report: { [weak self] in self?.onScan?($0) })
    }

    /// How recently an access point must have been seen to be reported on starting.
    public static let recentAge: Duration = WirelessDaemon.recentAge

    /// Stops scanning: the timer is cancelled and any `ScanDone` is ignored. Interfaces are still followed.
    public func stop() {
        schedule.stop()
        abortRound()
    }

    // MARK: Following wpa_supplicant

    /// Forgets what wpa_supplicant had, when it left the bus.
    private func forgetInterfaces() {
        changesDuringLoad = nil
        abortRound()
        schedule.cancelPending()
        known.removeAll()
        p2pDevices.removeAll()
        examining.removeAll()
    }

    /// Reads `Interfaces` and reconciles it with what the signals said meanwhile.
    private func loadInterfaces() async {
        guard let owner = daemon.owner else { return }
        daemon.loadGeneration += 1
        let generation = daemon.loadGeneration
        changesDuringLoad = ([], [])
        let value: DBusValue
        do {
            value = try await daemon.calls.property(owner, Self.rootPath, Self.rootInterface, "Interfaces")
        } catch {
            if generation == daemon.loadGeneration { changesDuringLoad = nil }
            logger.warning("\(error)")
            return
        }
        guard generation == daemon.loadGeneration, let changes = changesDuringLoad else { return }
        changesDuringLoad = nil
        guard let paths = value.objectPaths else {
            logger.warning("wpa_supplicant's Interfaces is \(value.signature), not ao")
            return
        }
        let current = paths.filter { !changes.removed.contains($0) }
        for path in known where !current.contains(path) && !changes.added.contains(path) { removeInterface(path) }
        p2pDevices = p2pDevices.filter { current.contains($0) || changes.added.contains($0) }
        // Paths another read is examining are read again: that read may belong to a load this one superseded.
        // Whichever finishes first while the path is still wanted adds it.
        let new = current.filter { !known.contains($0) && !p2pDevices.contains($0) }
        examining.formUnion(new)
        let names = await concurrently(new, atMost: Self.parallelReads) { [self] path in
            (path, await ifname(of: path, owner: owner))
        }
        guard generation == daemon.loadGeneration else { return }
        for (path, name) in names where examining.remove(path) != nil { consider(path, ifname: name, scanning: false) }
        beginRound()
    }

    /// The interface's `Ifname`; nil when it cannot be read.
    private func ifname(of path: ObjectPath, owner: String) async -> String? {
        do {
            let value = try await daemon.calls.property(owner, path, Self.interfaceInterface, "Ifname")
            guard let name = value.string else {
                logger.warning("wpa_supplicant's Ifname of \(path) is \(value.signature), not s")
                return nil
            }
            return name
        } catch {
            logger.warning("\(error)")
            return nil
        }
    }

    /// Adds the interface unless it is a P2P device; an interface whose name is unknown is added.
    private func consider(_ path: ObjectPath, ifname: String?, scanning: Bool = true) {
        if let ifname, ifname.hasPrefix("p2p-dev-") {
            guard p2pDevices.insert(path).inserted else { return }
            logger.info("wpa_supplicant's interface \(path) is the P2P device \(ifname), which is not scanned")
            return
        }
        addInterface(path, scanning: scanning)
    }

    private func rootSignal(_ message: Message) {
        guard daemon.sent(message) else { return }
        switch message.member {
        case "InterfaceAdded":
            let arguments = message.arguments()
            guard arguments.count == 2, let path = arguments[0].objectPath else {
                logger.warning("wpa_supplicant sent InterfaceAdded with (\(message.signature)), not (oa{sv})")
                return
            }
            changesDuringLoad?.added.insert(path)
            changesDuringLoad?.removed.remove(path)
            guard !known.contains(path), !p2pDevices.contains(path), !examining.contains(path) else { return }
            if let name = arguments[1].stringKeyedEntries?["Ifname"]?.string {
                consider(path, ifname: name)
            } else if let owner = daemon.owner {
                examining.insert(path)
                BusActor.task { [self] in
                    let name = await ifname(of: path, owner: owner)
                    guard examining.remove(path) != nil else { return }
                    consider(path, ifname: name)
                }
            }
        case "InterfaceRemoved":
            let arguments = message.arguments()
            guard arguments.count == 1, let path = arguments[0].objectPath else {
                logger.warning("wpa_supplicant sent InterfaceRemoved with (\(message.signature)), not (o)")
                return
            }
            changesDuringLoad?.removed.insert(path)
            changesDuringLoad?.added.remove(path)
            removeInterface(path)
        default:
            break
        }
    }

    /// Adds an interface; with `scanning`, a round starts at once when started and none runs.
    private func addInterface(_ path: ObjectPath, scanning: Bool = true) {
        guard !known.contains(path) else { return }
        known.append(path)
        logger.info("wpa_supplicant manages the wireless interface \(path)")
        daemon.notifyIfChanged()
        if scanning { beginRound() }
    }

    private func removeInterface(_ path: ObjectPath) {
        examining.remove(path)
        p2pDevices.remove(path)
        guard let index = known.firstIndex(of: path) else { return }
        known.remove(at: index)
        logger.info("wpa_supplicant no longer manages the wireless interface \(path)")
        if round != nil {
            round?.waiting.remove(path)
            round?.reading.remove(path)
            round?.results[path] = nil
            finishRoundIfComplete()
        }
        daemon.notifyIfChanged()
    }

    // MARK: Scan rounds

    /// Starts a round when started, none runs, and there is something to scan.
    private func beginRound() {
        guard schedule.isStarted, round == nil, let owner = daemon.owner, !known.isEmpty else { return }
        schedule.cancelPending()
        let id = openRound(waiting: Set(known))
        for path in known {
            BusActor.task { [self] in await requestScan(path, owner: owner, round: id) }
        }
    }

    private func openRound(waiting: Set<ObjectPath>) -> UInt64 {
        let id = daemon.newRoundID()
        let timeout = timers.scheduleOnBus(after: daemon.roundTimeout) { [weak self] in self?.roundTimedOut(id) }
        round = Round(id: id, waiting: waiting, timeout: timeout)
        return id
    }

    private func requestScan(_ path: ObjectPath, owner: String, round id: UInt64) async {
        do {
            _ = try await daemon.calls.call(
                owner, path, Self.interfaceInterface, "Scan", [.vardict(["Type": .string("passive")])])
        } catch {
            logger.debug("wpa_supplicant did not scan on \(path), which is left out of this round: \(error)")
            guard round?.id == id else { return }
            round?.waiting.remove(path)
            finishRoundIfComplete()
        }
    }

    private func scanDone(_ message: Message) {
        guard daemon.sent(message), let owner = daemon.owner, let path = message.path,
            known.contains(path), schedule.isStarted
        else { return }
        let arguments = message.arguments()
        guard arguments.count == 1, let success = arguments[0].bool else {
            logger.warning("wpa_supplicant sent ScanDone with (\(message.signature)), not (b)")
            return
        }
        guard let current = round else {
            // Someone else's scan, or wpa_supplicant's own: every interface's list is read.
            guard success else { return }
            logger.debug("a scan on \(path) that was not asked for finished; reading every interface")
            schedule.cancelPending()
            let id = openRound(waiting: [])
            for interface in known { read(interface, owner: owner, round: id) }
            return
        }
        guard current.results[path] == nil, !current.reading.contains(path) else { return }
        if !success { logger.debug("wpa_supplicant's scan on \(path) failed; its current list is read") }
        round?.waiting.remove(path)
        read(path, owner: owner, round: current.id)
    }

    private func read(_ path: ObjectPath, owner: String, round id: UInt64) {
        round?.reading.insert(path)
        BusActor.task { [self] in
            let points = await accessPoints(of: path, owner: owner)
            guard let current = round, current.id == id, current.reading.contains(path) else { return }
            round?.reading.remove(path)
            if let points { round?.results[path] = points }
            finishRoundIfComplete()
        }
    }

    private func roundTimedOut(_ id: UInt64) {
        guard let current = round, current.id == id else { return }
        round?.timeout = nil
        let late = current.waiting.union(current.reading).map(\.rawValue).sorted()
        logger.debug(
            "wpa_supplicant's interfaces \(late.joined(separator: ", ")) did not report within \(daemon.roundTimeout)")
        finishRound()
    }

    private func finishRoundIfComplete() {
        guard let current = round, current.waiting.isEmpty, current.reading.isEmpty else { return }
        finishRound()
    }

    /// Ends the round: reports what was read (if anything) and arms the next round.
    private func finishRound() {
        guard let finished = round else { return }
        if let timeout = finished.timeout { timers.cancelTimer(timeout) }
        round = nil
        if !finished.results.isEmpty {
            var union = AccessPointUnion()
            for path in known { if let points = finished.results[path] { union.add(points) } }
            onScan?(union.accessPoints)
        }
        schedule.scheduleNext()
    }

    /// Drops the running round, if any; what it still reads is ignored.
    private func abortRound() {
        if let timeout = round?.timeout { timers.cancelTimer(timeout) }
        round = nil
    }

    // MARK: Reading access points

    /// The access points an interface knows now; nil when its `BSSs` cannot be read.
    private func accessPoints(of interface: ObjectPath, owner: String) async -> [AccessPoint]? {
        await daemon.accessPoints(
            of: interface, owner: owner, list: "BSSs", interface: Self.interfaceInterface, element: "BSS",
            elements: "BSSs", elementInterface: Self.bssInterface, maximum: Self.maximumBSSs,
            parallelReads: Self.parallelReads,
            parse: { properties throws(PeerFailure) in
                try Self.accessPoint(bss: properties)
            })
    }

    /// The access point that a BSS's properties describe; fails when one that is needed is missing, of the
    /// wrong type, or (the BSSID) not six bytes long.
    static func accessPoint(bss properties: [String: DBusValue]) throws(PeerFailure) -> AccessPoint {
        guard let bssidValue = properties["BSSID"], let octets = bssidValue.bytes else {
            throw PeerFailure("its BSSID is \(properties["BSSID"]?.signature ?? "missing"), not ay")
        }
        guard let bssid = BSSID(octets: octets) else {
            throw PeerFailure("its BSSID has \(octets.count) bytes, not 6")
        }
        guard let ssid = properties["SSID"]?.bytes else {
            throw PeerFailure("its SSID is \(properties["SSID"]?.signature ?? "missing"), not ay")
        }
        guard case .int16(let signal) = properties["Signal"] else {
            throw PeerFailure("its Signal is \(properties["Signal"]?.signature ?? "missing"), not n")
        }
        var frequency: Int?
        if let value = properties["Frequency"] {
            guard case .uint16(let megahertz) = value else {
                throw PeerFailure("its Frequency is \(value.signature), not q")
            }
            frequency = Int(megahertz)
        }
        var age: Duration?
        if let value = properties["Age"] {
            guard case .uint32(let seconds) = value else { throw PeerFailure("its Age is \(value.signature), not u") }
            age = .seconds(Int64(seconds))
        }
        return AccessPoint(bssid: bssid, ssid: ssid, signal: Int(signal), frequency: frequency, age: age)
    }
}
