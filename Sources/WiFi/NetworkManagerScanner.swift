import DBus
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsProviders

/// Wi-Fi scans through NetworkManager's D-Bus API (`org.freedesktop.NetworkManager`), on every Wi-Fi device.
///
/// It works whatever NetworkManager drives the radios with (wpa_supplicant or iwd), at the price of precision:
/// NetworkManager gives an access point's strength as a percentage, which ``SignalStrength/dBm(fromQuality:)``
/// turns back into dBm, and when it was last seen in whole seconds.
///
/// **Following.** From the moment it is made, the scanner follows who owns `org.freedesktop.NetworkManager`
/// (`GetNameOwner`, then `NameOwnerChanged`), its devices (`GetDevices`, `DeviceAdded`, `DeviceRemoved`) and
/// which of them are Wi-Fi (`DeviceType` 2). Like ``WPASupplicantScanner`` it calls only the owner's unique name,
/// never the well-known one, and counts only signals from that unique name.
///
/// **Scanning.** A round asks every Wi-Fi device for `RequestScan({})`
/// (`org.freedesktop.NetworkManager.Device.Wireless`). NetworkManager announces a finished scan by changing the
/// device's `LastScan` (`x`, milliseconds of `CLOCK_BOOTTIME`, NetworkManager 1.12 and later), so the round
/// waits for that on every device that has the property and accepted the request. A device without `LastScan`
/// (older NetworkManager, and python-dbusmock's `networkmanager` template, whose `RequestScan` does nothing)
/// gets a fixed settle delay instead (``settleDelay``, 1.5 s by default); the round timeout (5 s by default)
/// bounds the wait in any case. A refused request (NetworkManager refuses while it scans or just after a scan)
/// is logged at debug level; that device's list is read anyway, since NetworkManager keeps it current.
///
/// Then every Wi-Fi device's `AccessPoints` (`ao`) are read, and each access point with one
/// `GetAll("org.freedesktop.NetworkManager.AccessPoint")`: `HwAddress s`, `Ssid ay`, `Strength y` (percent),
/// `Frequency u` (MHz) and `LastSeen i` (seconds of `CLOCK_BOOTTIME`, −1 for never), from which the age is
/// measured against `CLOCK_BOOTTIME` now. ``onScan`` gets the union, each BSSID once.
///
/// Outside a round, while started, a `LastScan` change (NetworkManager scans by itself) is reported the same
/// way; for a device without `LastScan`, `AccessPointAdded` / `AccessPointRemoved` stand in for it, once they
/// have been quiet for the settle delay. The next round is due `interval` after each report. Access points with
/// properties of the wrong type are left out and logged; a wrong reply is a failure logged, never a crash.
@BusActor
public final class NetworkManagerScanner: AccessPointScanner, WirelessBackend {
    /// NetworkManager's well-known bus name.
    public static let busName = "org.freedesktop.NetworkManager"
    static let managerPath = ObjectPath("/org/freedesktop/NetworkManager")!
    static let managerInterface = "org.freedesktop.NetworkManager"
    static let deviceInterface = "org.freedesktop.NetworkManager.Device"
    static let wirelessInterface = "org.freedesktop.NetworkManager.Device.Wireless"
    static let accessPointInterface = "org.freedesktop.NetworkManager.AccessPoint"
    /// `NM_DEVICE_TYPE_WIFI`.
    static let wifiDeviceType: UInt32 = 2
    /// How long one call to NetworkManager may take.
    public static let callTimeout: Duration = .seconds(5)
    /// A Wi-Fi device's `AccessPoints`, at most 512 of them read per scan.
    static let accessPointList = AccessPointList(
        property: "AccessPoints", interface: wirelessInterface, elementInterface: accessPointInterface,
        element: "access point", elements: "access points", maximum: 512)

    /// `NetworkManager`.
    public let backend = "NetworkManager"
    /// True while NetworkManager is on the bus and has at least one Wi-Fi device.
    public var isAvailable: Bool { daemon.owner != nil && !devices.isEmpty }
    /// True while some connection owns `org.freedesktop.NetworkManager`.
    public var isServiceRunning: Bool { daemon.owner != nil }
    /// The object paths of NetworkManager's Wi-Fi devices, in the order they became known.
    public var wifiDevices: [ObjectPath] { devices.map(\.path) }
    /// Called after each scan with the access points of every Wi-Fi device.
    public var onScan: (@BusActor ([AccessPoint]) -> Void)?
    /// Called when ``isAvailable`` or ``isServiceRunning`` changes.
    public var onAvailabilityChanged: (@BusActor () -> Void)? {
        get { daemon.onAvailabilityChanged }
        set { daemon.onAvailabilityChanged = newValue }
    }
    /// How long a round waits for a device that has no `LastScan` property.
    public let settleDelay: Duration

    let daemon: WirelessDaemon
    var logger: any Logger { daemon.logger }
    var schedule: ScanSchedule { daemon.schedule }
    var timers: any TimerScheduler { daemon.timers }

    struct Device {
        let path: ObjectPath
        /// The last `LastScan` seen; nil when the device has no such property.
        var lastScan: Int64?
    }
    private(set) var devices: [Device] = []
    /// Devices whose type is being asked for; one removed meanwhile is dropped from here and not added.
    private var examining: Set<ObjectPath> = []
    /// Devices removed by signals while `GetDevices` is being answered, whose answer may predate that.
    private var removedDuringLoad: Set<ObjectPath>?

    /// A scan round: the devices whose `LastScan` is awaited, whether the settle delay is still running, and
    /// whether the lists are being read.
    struct Round {
        let id: UInt64
        var waiting: Set<ObjectPath>
        var settling: Bool
        var reading = false
        var timers: [ScheduledTimer] = []
    }
    var round: Round?
    /// The quiet period after `AccessPointAdded` / `AccessPointRemoved` outside a round.
    var hint: ScheduledTimer?

    /// Starts following NetworkManager on `connection` (asynchronously: this returns at once), reading the time from
    /// `clock` and arming timers on `timers`.
    public init(
        connection: Connection, clock: any WhereaboutsCore.Clock, timers: any TimerScheduler, logger: any Logger,
        settleDelay: Duration = .milliseconds(1500), roundTimeout: Duration = .seconds(5)
    ) {
        self.settleDelay = settleDelay
        daemon = WirelessDaemon(
            service: "NetworkManager", busName: Self.busName, connection: connection, clock: clock, timers: timers,
            logger: logger, callTimeout: Self.callTimeout, roundTimeout: roundTimeout)
        daemon.follow(connection, for: self)
    }

    /// Subscribes to the signals followed besides the daemon's owner.
    func subscribe(on connection: Connection) async throws(DBusError) {
        _ = try await connection.subscribe(
            SignalMatch(sender: Self.busName, path: Self.managerPath, interface: Self.managerInterface)
        ) { [weak self] message in self?.managerSignal(message) }
        _ = try await connection.subscribe(
            SignalMatch(
                sender: Self.busName, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                stringArguments: [0: Self.wirelessInterface])
        ) { [weak self] message in self?.propertiesChanged(message) }
        // AccessPointAdded/Removed, and the per-interface PropertiesChanged of older NetworkManager versions.
        _ = try await connection.subscribe(SignalMatch(sender: Self.busName, interface: Self.wirelessInterface)) {
            [weak self] message in self?.wirelessSignal(message)
        }
    }

    /// Returns once the first look at the bus is done: whether NetworkManager runs, and its Wi-Fi devices.
    public func ready() async {
        await daemon.ready()
    }

    /// Scans now (unless a round is running), then every `interval`, until ``stop()``. When started already it
    /// only changes the interval: from the next scan, or sooner when the new interval is shorter.
    ///
    /// On starting, the access points NetworkManager saw in the last ``recentAge`` are reported at once, before
    /// the first scan ends, so that a known place is located from the cache without waiting for it.
    public func start(interval: Duration) {
        daemon.start(interval: interval, lists: devices.map(\.path))
    }

    /// How recently an access point must have been seen to be reported on starting.
    public static let recentAge: Duration = WirelessDaemon.recentAge

    /// Stops scanning: timers are cancelled and scan results are ignored. Devices are still followed.
    public func stop() {
        schedule.stop()
        abortRound()
        cancelHint()
    }

    // MARK: Following NetworkManager

    /// Forgets what NetworkManager had, when it left the bus.
    func daemonLeft() {
        removedDuringLoad = nil
        examining.removeAll()
        abortRound()
        cancelHint()
        schedule.cancelPending()
        devices.removeAll()
    }

    func loadFromDaemon() async {
        guard let (owner, generation) = daemon.beginLoad() else { return }
        removedDuringLoad = []
        let reply: [DBusValue]
        do {
            reply = try await daemon.calls.call(owner, Self.managerPath, Self.managerInterface, "GetDevices")
        } catch {
            if generation == daemon.loadGeneration { removedDuringLoad = nil }
            logger.warning("NetworkManager's GetDevices failed: \(error)")
            return
        }
        guard generation == daemon.loadGeneration, let removed = removedDuringLoad else { return }
        removedDuringLoad = nil
        guard reply.count == 1, let paths = reply[0].objectPaths else {
            logger.warning("NetworkManager answered GetDevices with (\(reply.map(\.signature).joined())), not (ao)")
            return
        }
        let current = paths.filter { !removed.contains($0) }
        for device in devices where !current.contains(device.path) { removeDevice(device.path) }
        let found = await concurrently(current, atMost: WirelessDaemon.parallelReads) { [self] path in
            await examine(path, owner: owner, generation: generation)
        }
        guard generation == daemon.loadGeneration else { return }
        for device in found { addDevice(device, scanning: false) }
        beginRound()
    }

    /// The device at `path` when it is Wi-Fi and was not removed meanwhile; with its `LastScan`, if it has one.
    private func examine(_ path: ObjectPath, owner: String, generation: Int) async -> Device? {
        examining.insert(path)
        defer { if generation == daemon.loadGeneration { examining.remove(path) } }
        let type: DBusValue
        do {
            type = try await daemon.calls.property(owner, path, Self.deviceInterface, "DeviceType")
        } catch {
            logger.warning("\(error)")
            return nil
        }
        guard let code = type.uint32 else {
            logger.warning("NetworkManager's DeviceType of \(path) is \(type.signature), not u")
            return nil
        }
        guard code == Self.wifiDeviceType else { return nil }
        var lastScan: Int64?
        do {
            let value = try await daemon.calls.property(owner, path, Self.wirelessInterface, "LastScan")
            if let milliseconds = value.int64 {
                lastScan = milliseconds
            } else {
                logger.warning("NetworkManager's LastScan of \(path) is \(value.signature), not x")
            }
        } catch {
            logger.debug("\(path) has no LastScan, so its scans are given \(settleDelay) to settle: \(error)")
        }
        guard generation == daemon.loadGeneration, examining.contains(path) else { return nil }
        return Device(path: path, lastScan: lastScan)
    }

    private func managerSignal(_ message: Message) {
        guard daemon.sent(message) else { return }
        let member = message.member
        guard member == "DeviceAdded" || member == "DeviceRemoved" else { return }
        let arguments = message.arguments()
        guard arguments.count == 1, let path = arguments[0].objectPath else {
            logger.warning("NetworkManager sent \(member ?? "") with (\(message.signature)), not (o)")
            return
        }
        if member == "DeviceAdded" {
            guard let owner = daemon.owner else { return }
            let generation = daemon.loadGeneration
            BusActor.task { [self] in
                if let device = await examine(path, owner: owner, generation: generation) { addDevice(device) }
            }
        } else {
            removedDuringLoad?.insert(path)
            examining.remove(path)
            removeDevice(path)
        }
    }

    private func addDevice(_ device: Device, scanning: Bool = true) {
        guard !devices.contains(where: { $0.path == device.path }) else { return }
        devices.append(device)
        logger.info("NetworkManager has the Wi-Fi device \(device.path)")
        daemon.notifyIfChanged()
        if scanning { beginRound() }
    }

    private func removeDevice(_ path: ObjectPath) {
        guard let index = devices.firstIndex(where: { $0.path == path }) else { return }
        devices.remove(at: index)
        logger.info("NetworkManager no longer has the Wi-Fi device \(path)")
        if round != nil {
            round?.waiting.remove(path)
            finishWaitingIfDone()
        }
        daemon.notifyIfChanged()
    }

    private func propertiesChanged(_ message: Message) {
        guard daemon.sent(message) else { return }
        let arguments = message.arguments()
        guard arguments.count == 3, arguments[0].string == Self.wirelessInterface,
            let changed = arguments[1].stringKeyedEntries
        else { return }
        if let value = changed["LastScan"] { lastScanChanged(message.path, value) }
    }

    private func wirelessSignal(_ message: Message) {
        guard daemon.sent(message), let path = message.path else { return }
        switch message.member {
        case "PropertiesChanged":
            let arguments = message.arguments()
            guard arguments.count == 1, let changed = arguments[0].stringKeyedEntries else { return }
            if let value = changed["LastScan"] { lastScanChanged(path, value) }
        case "AccessPointAdded", "AccessPointRemoved":
            guard let device = devices.first(where: { $0.path == path }), device.lastScan == nil,
                schedule.isStarted, round == nil
            else { return }
            cancelHint()
            hint = timers.scheduleOnBus(after: settleDelay) { [weak self] in
                guard let self else { return }
                self.hint = nil
                guard self.schedule.isStarted, self.round == nil, !self.devices.isEmpty else { return }
                self.logger.debug("NetworkManager's access points changed outside a scan round; reading them")
                self.readAndReport(round: self.openRound(waiting: [], settling: false))
            }
        default:
            break
        }
    }

    private func lastScanChanged(_ path: ObjectPath?, _ value: DBusValue) {
        guard let path, let index = devices.firstIndex(where: { $0.path == path }) else { return }
        guard let milliseconds = value.int64 else {
            logger.warning("NetworkManager's LastScan of \(path) changed to a \(value.signature), not x")
            return
        }
        guard devices[index].lastScan != milliseconds else { return }
        devices[index].lastScan = milliseconds
        guard schedule.isStarted else { return }
        if let current = round {
            guard current.waiting.contains(path) else { return }
            round?.waiting.remove(path)
            finishWaitingIfDone()
        } else {
            logger.debug("NetworkManager finished a scan on \(path) that was not asked for; reading every device")
            cancelHint()
            readAndReport(round: openRound(waiting: [], settling: false))
        }
    }
}
