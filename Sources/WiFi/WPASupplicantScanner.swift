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
public final class WPASupplicantScanner: AccessPointScanner, WirelessBackend {
    /// wpa_supplicant's well-known bus name.
    public static let busName = "fi.w1.wpa_supplicant1"
    /// The root object, with `Interfaces` and the interface signals.
    public static let rootPath = ObjectPath("/fi/w1/wpa_supplicant1")!
    static let rootInterface = "fi.w1.wpa_supplicant1"
    static let interfaceInterface = "fi.w1.wpa_supplicant1.Interface"
    static let bssInterface = "fi.w1.wpa_supplicant1.BSS"
    /// How long one call to wpa_supplicant may take.
    public static let callTimeout: Duration = .seconds(5)
    /// An interface's `BSSs`, at most 512 of them read per scan (wpa_supplicant keeps 200 by default).
    static let bssList = AccessPointList(
        property: "BSSs", interface: interfaceInterface, elementInterface: bssInterface, element: "BSS",
        elements: "BSSs", maximum: 512)

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

    let daemon: WirelessDaemon
    var logger: any Logger { daemon.logger }
    var schedule: ScanSchedule { daemon.schedule }
    var timers: any TimerScheduler { daemon.timers }

    private(set) var known: [ObjectPath] = []
    /// Interfaces left out: P2P devices (`p2p-dev-*`), which have no access points to scan for.
    private var p2pDevices: Set<ObjectPath> = []
    /// Interfaces whose `Ifname` is being read; one removed meanwhile is dropped from here and not added.
    private var examining: Set<ObjectPath> = []
    /// Interfaces added and removed by signals while `Interfaces` is being read, whose answer may predate them.
    private var changesDuringLoad: (added: Set<ObjectPath>, removed: Set<ObjectPath>)?

    /// A scan round: the interfaces asked that have not reported, those being read, and what was read.
    struct Round {
        let id: UInt64
        var waiting: Set<ObjectPath>
        var reading: Set<ObjectPath> = []
        var results: [ObjectPath: [AccessPoint]] = [:]
        var timeout: ScheduledTimer?
    }
    var round: Round?

    /// Starts following wpa_supplicant on `connection` (asynchronously: this returns at once), reading the time from
    /// `clock` and arming timers on `timers`. A scan round reports after `roundTimeout` at the latest.
    public init(
        connection: Connection, clock: any WhereaboutsCore.Clock, timers: any TimerScheduler, logger: any Logger,
        roundTimeout: Duration = .seconds(5)
    ) {
        daemon = WirelessDaemon(
            service: "wpa_supplicant", busName: Self.busName, connection: connection, clock: clock, timers: timers,
            logger: logger, callTimeout: Self.callTimeout, roundTimeout: roundTimeout)
        daemon.follow(connection, for: self)
    }

    /// Returns once the first look at the bus is done: whether wpa_supplicant runs, and its interfaces.
    public func ready() async {
        await daemon.ready()
    }

    /// Subscribes to the signals followed besides the daemon's owner.
    func subscribe(on connection: Connection) async throws(DBusError) {
        _ = try await connection.subscribe(
            SignalMatch(sender: Self.busName, path: Self.rootPath, interface: Self.rootInterface)
        ) { [weak self] message in self?.rootSignal(message) }
        _ = try await connection.subscribe(
            SignalMatch(sender: Self.busName, interface: Self.interfaceInterface, member: "ScanDone")
        ) { [weak self] message in self?.scanDone(message) }
    }

    /// Scans now (unless a round is running), then every `interval`, until ``stop()``. When started already it
    /// only changes the interval: from the next scan, or sooner when the new interval is shorter.
    ///
    /// On starting, what wpa_supplicant already holds from scans of the last ``recentAge`` (its own, or another
    /// client's) is reported at once, before the first scan of ours ends: a passive scan takes seconds, and a
    /// known place is then located from the cache without waiting for it.
    public func start(interval: Duration) {
        daemon.start(interval: interval, lists: known)
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
    func daemonLeft() {
        changesDuringLoad = nil
        abortRound()
        schedule.cancelPending()
        known.removeAll()
        p2pDevices.removeAll()
        examining.removeAll()
    }

    /// Reads `Interfaces` and reconciles it with what the signals said meanwhile.
    func loadFromDaemon() async {
        guard let (owner, generation) = daemon.beginLoad() else { return }
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
        let names = await concurrently(new, atMost: WirelessDaemon.parallelReads) { [self] path in
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
        let expected: (count: Int, signature: String)
        switch message.member {
        case "InterfaceAdded": expected = (2, "oa{sv}")
        case "InterfaceRemoved": expected = (1, "o")
        default: return
        }
        let arguments = message.arguments()
        guard arguments.count == expected.count, let path = arguments[0].objectPath else {
            logger.warning(
                "wpa_supplicant sent \(message.member ?? "") with (\(message.signature)), not (\(expected.signature))")
            return
        }
        if expected.count == 2 {
            interfaceAdded(path, properties: arguments[1])
        } else {
            changesDuringLoad?.removed.insert(path)
            changesDuringLoad?.added.remove(path)
            removeInterface(path)
        }
    }

    /// `InterfaceAdded`: the interface is added unless it is a P2P device, its `Ifname` read first when the signal
    /// does not tell it.
    private func interfaceAdded(_ path: ObjectPath, properties: DBusValue) {
        changesDuringLoad?.added.insert(path)
        changesDuringLoad?.removed.remove(path)
        guard !known.contains(path), !p2pDevices.contains(path), !examining.contains(path) else { return }
        if let name = properties.stringKeyedEntries?["Ifname"]?.string {
            consider(path, ifname: name)
        } else if let owner = daemon.owner {
            examining.insert(path)
            BusActor.task { [self] in
                let name = await ifname(of: path, owner: owner)
                guard examining.remove(path) != nil else { return }
                consider(path, ifname: name)
            }
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
}
