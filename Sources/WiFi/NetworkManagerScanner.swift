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
public final class NetworkManagerScanner: AccessPointScanner {
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
    static let maximumAccessPoints = 512
    static let parallelReads = 16

    /// `NetworkManager`.
    public let backend = "NetworkManager"
    /// True while NetworkManager is on the bus and has at least one Wi-Fi device.
    public var isAvailable: Bool { follower.owner != nil && !devices.isEmpty }
    /// True while some connection owns `org.freedesktop.NetworkManager`.
    public var isServiceRunning: Bool { follower.owner != nil }
    /// The object paths of NetworkManager's Wi-Fi devices, in the order they became known.
    public var wifiDevices: [ObjectPath] { devices.map(\.path) }
    /// Called after each scan with the access points of every Wi-Fi device.
    public var onScan: (@BusActor ([AccessPoint]) -> Void)?
    /// Called when ``isAvailable`` or ``isServiceRunning`` changes.
    public var onAvailabilityChanged: (@BusActor () -> Void)?
    /// How long a round waits for a device that has no `LastScan` property.
    public let settleDelay: Duration

    private let logger: any Logger
    private let calls: PeerCalls
    private let follower: NameOwnerFollower
    private let schedule: ScanSchedule
    private let timers: any TimerScheduler
    private let roundTimeout: Duration
    private var following: Task<Void, Never>?

    private struct Device {
        let path: ObjectPath
        /// The last `LastScan` seen; nil when the device has no such property.
        var lastScan: Int64?
    }
    private var devices: [Device] = []
    /// Devices whose type is being asked for; one removed meanwhile is dropped from here and not added.
    private var examining: Set<ObjectPath> = []
    private var loadGeneration = 0
    /// Devices removed by signals while `GetDevices` is being answered, whose answer may predate that.
    private var removedDuringLoad: Set<ObjectPath>?

    /// A scan round: the devices whose `LastScan` is awaited, whether the settle delay is still running, and
    /// whether the lists are being read.
    private struct Round {
        let id: UInt64
        var waiting: Set<ObjectPath>
        var settling: Bool
        var reading = false
        var timers: [ScheduledTimer] = []
    }
    private var round: Round?
    private var nextRoundID: UInt64 = 1
    /// The quiet period after `AccessPointAdded` / `AccessPointRemoved` outside a round.
    private var hint: ScheduledTimer?
    private var reported: (running: Bool, available: Bool) = (false, false)

    /// Starts following NetworkManager on `connection` (asynchronously: this returns at once), reading the time from
    /// `clock` and arming timers on `timers`.
    public init(
        connection: Connection, clock: any WhereaboutsCore.Clock, timers: any TimerScheduler, logger: any Logger,
        settleDelay: Duration = .milliseconds(1500), roundTimeout: Duration = .seconds(5)
    ) {
        self.logger = logger
        self.timers = timers
        schedule = ScanSchedule(clock: clock, timers: timers)
        self.settleDelay = settleDelay
        self.roundTimeout = roundTimeout
        calls = PeerCalls(connection: connection, service: "NetworkManager", timeout: Self.callTimeout)
        follower = NameOwnerFollower(name: Self.busName, connection: connection, timeout: Self.callTimeout)
        schedule.fire = { [weak self] in self?.beginRound() }
        follower.onChange = { [weak self] previous in self?.ownerChanged(from: previous) }
        following = BusActor.task { [self] in await follow(connection) }
    }

    /// Returns once the first look at the bus is done: whether NetworkManager runs, and its Wi-Fi devices.
    public func ready() async {
        await following?.value
    }

    /// Scans now (unless a round is running), then every `interval`, until ``stop()``. When started already it
    /// only changes the interval: from the next scan, or sooner when the new interval is shorter.
    ///
    /// On starting, the access points NetworkManager saw in the last ``recentAge`` are reported at once, before
    /// the first scan ends, so that a known place is located from the cache without waiting for it.
    public func start(interval: Duration) {
        guard schedule.start(interval: interval) else { return }
        reportRecentThenScan()
    }

    /// How recently an access point must have been seen to be reported on starting.
    public static let recentAge: Duration = .seconds(30)

    /// Reports what is held, then begins the first round: the lists are read before any scan of ours is asked
    /// for, so that the report is what was held, never half of our own scan.
    private func reportRecentThenScan() {
        guard let owner = follower.owner, !devices.isEmpty else { return beginRound() }
        let paths = devices.map(\.path)
        let generation = loadGeneration
        BusActor.task { [self] in
            var union = AccessPointUnion()
            for path in paths {
                let points = await accessPoints(of: path, owner: owner) ?? []
                union.add(points.filter { ($0.age ?? Self.recentAge) < Self.recentAge })
            }
            // Nothing more once stopped, or for a NetworkManager that has left meanwhile (its return begins a round).
            guard schedule.isStarted, generation == loadGeneration else { return }
            if !union.accessPoints.isEmpty { onScan?(union.accessPoints) }
            beginRound()
        }
    }

    /// Stops scanning: timers are cancelled and scan results are ignored. Devices are still followed.
    public func stop() {
        schedule.stop()
        abortRound()
        cancelHint()
    }

    // MARK: Following NetworkManager

    private func follow(_ connection: Connection) async {
        do throws(DBusError) {
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
            try await follower.start()
        } catch {
            logger.warning("cannot follow NetworkManager on the bus: \(error)")
            return
        }
        if follower.owner == nil {
            logger.info("NetworkManager is not on the bus")
        } else {
            await loadDevices()
        }
        notifyIfChanged()
    }

    private func ownerChanged(from previous: String?) {
        if previous != nil {
            logger.info("NetworkManager left the bus")
            loadGeneration += 1
            removedDuringLoad = nil
            examining.removeAll()
            abortRound()
            cancelHint()
            schedule.cancelPending()
            devices.removeAll()
        }
        if follower.owner != nil {
            logger.info("NetworkManager is on the bus")
            BusActor.task { [self] in await loadDevices() }
        }
        notifyIfChanged()
    }

    private func loadDevices() async {
        guard let owner = follower.owner else { return }
        loadGeneration += 1
        let generation = loadGeneration
        removedDuringLoad = []
        let reply: [DBusValue]
        do {
            reply = try await calls.call(owner, Self.managerPath, Self.managerInterface, "GetDevices")
        } catch {
            if generation == loadGeneration { removedDuringLoad = nil }
            logger.warning("NetworkManager's GetDevices failed: \(error)")
            return
        }
        guard generation == loadGeneration, let removed = removedDuringLoad else { return }
        removedDuringLoad = nil
        guard reply.count == 1, let paths = reply[0].objectPaths else {
            logger.warning("NetworkManager answered GetDevices with (\(reply.map(\.signature).joined())), not (ao)")
            return
        }
        let current = paths.filter { !removed.contains($0) }
        for device in devices where !current.contains(device.path) { removeDevice(device.path) }
        let found = await concurrently(current, atMost: Self.parallelReads) { [self] path in
            await examine(path, owner: owner, generation: generation)
        }
        guard generation == loadGeneration else { return }
        for device in found { addDevice(device, scanning: false) }
        beginRound()
    }

    /// The device at `path` when it is Wi-Fi and was not removed meanwhile; with its `LastScan`, if it has one.
    private func examine(_ path: ObjectPath, owner: String, generation: Int) async -> Device? {
        examining.insert(path)
        defer { if generation == loadGeneration { examining.remove(path) } }
        let type: DBusValue
        do {
            type = try await calls.property(owner, path, Self.deviceInterface, "DeviceType")
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
            let value = try await calls.property(owner, path, Self.wirelessInterface, "LastScan")
            if let milliseconds = value.int64 {
                lastScan = milliseconds
            } else {
                logger.warning("NetworkManager's LastScan of \(path) is \(value.signature), not x")
            }
        } catch {
            logger.debug("\(path) has no LastScan, so its scans are given \(settleDelay) to settle: \(error)")
        }
        guard generation == loadGeneration, examining.contains(path) else { return nil }
        return Device(path: path, lastScan: lastScan)
    }

    private func managerSignal(_ message: Message) {
        guard fromNetworkManager(message) else { return }
        let member = message.member
        guard member == "DeviceAdded" || member == "DeviceRemoved" else { return }
        let arguments = message.arguments()
        guard arguments.count == 1, let path = arguments[0].objectPath else {
            logger.warning("NetworkManager sent \(member ?? "") with (\(message.signature)), not (o)")
            return
        }
        if member == "DeviceAdded" {
            guard let owner = follower.owner else { return }
            let generation = loadGeneration
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
        notifyIfChanged()
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
        notifyIfChanged()
    }

    private func propertiesChanged(_ message: Message) {
        guard fromNetworkManager(message) else { return }
        let arguments = message.arguments()
        guard arguments.count == 3, arguments[0].string == Self.wirelessInterface,
            let changed = arguments[1].stringKeyedEntries
        else { return }
        if let value = changed["LastScan"] { lastScanChanged(message.path, value) }
    }

    private func wirelessSignal(_ message: Message) {
        guard fromNetworkManager(message), let path = message.path else { return }
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

    /// True when `message` comes from NetworkManager itself, not from a peer posing as it.
    private func fromNetworkManager(_ message: Message) -> Bool {
        guard let sender = message.sender, let owner = follower.owner else { return false }
        return sender == owner
    }

    private func notifyIfChanged() {
        let now = (running: isServiceRunning, available: isAvailable)
        guard now != reported else { return }
        reported = now
        onAvailabilityChanged?()
    }

    // MARK: Scan rounds

    private func beginRound() {
        guard schedule.isStarted, round == nil, let owner = follower.owner, !devices.isEmpty else { return }
        cancelHint()
        let waiting = Set(devices.filter { $0.lastScan != nil }.map(\.path))
        let id = openRound(waiting: waiting, settling: devices.contains { $0.lastScan == nil })
        for device in devices {
            BusActor.task { [self] in await requestScan(device.path, owner: owner, round: id) }
        }
    }

    /// Opens a round (cancelling the next one's timer) and arms its timeout and, with `settling`, its settle
    /// delay.
    private func openRound(waiting: Set<ObjectPath>, settling: Bool) -> UInt64 {
        schedule.cancelPending()
        let id = nextRoundID
        nextRoundID += 1
        var opened = Round(id: id, waiting: waiting, settling: settling)
        opened.timers.append(timers.scheduleOnBus(after: roundTimeout) { [weak self] in self?.timedOut(id) })
        if settling {
            opened.timers.append(timers.scheduleOnBus(after: settleDelay) { [weak self] in self?.settled(id) })
        }
        round = opened
        return id
    }

    private func requestScan(_ path: ObjectPath, owner: String, round id: UInt64) async {
        do {
            _ = try await calls.call(owner, path, Self.wirelessInterface, "RequestScan", [.vardict([:])])
        } catch {
            logger.debug("NetworkManager did not scan on \(path); its current list is read: \(error)")
            guard round?.id == id else { return }
            round?.waiting.remove(path)
            finishWaitingIfDone()
        }
    }

    private func settled(_ id: UInt64) {
        guard round?.id == id else { return }
        round?.settling = false
        finishWaitingIfDone()
    }

    private func timedOut(_ id: UInt64) {
        guard let current = round, current.id == id, !current.reading else { return }
        let late = current.waiting.map(\.rawValue).sorted()
        logger.debug(
            "NetworkManager's devices \(late.joined(separator: ", ")) did not finish scanning within \(roundTimeout)")
        readAndReport(round: id)
    }

    private func finishWaitingIfDone() {
        guard let current = round, !current.reading, current.waiting.isEmpty, !current.settling else { return }
        readAndReport(round: current.id)
    }

    /// Reads every Wi-Fi device's access points, reports them, and arms the next round.
    private func readAndReport(round id: UInt64) {
        guard let current = round, current.id == id, !current.reading else { return }
        guard let owner = follower.owner else {
            abortRound()
            return
        }
        for timer in current.timers { timers.cancelTimer(timer) }
        round?.timers = []
        round?.reading = true
        let paths = devices.map(\.path)
        BusActor.task { [self] in
            var union = AccessPointUnion()
            var anyRead = false
            for path in paths {
                guard let points = await accessPoints(of: path, owner: owner) else { continue }
                anyRead = true
                union.add(points)
            }
            guard round?.id == id else { return }
            round = nil
            if anyRead { onScan?(union.accessPoints) }
            schedule.scheduleNext()
        }
    }

    private func abortRound() {
        for timer in round?.timers ?? [] { timers.cancelTimer(timer) }
        round = nil
    }

    private func cancelHint() {
        if let hint { timers.cancelTimer(hint) }
        hint = nil
    }

    // MARK: Reading access points

    /// The access points a device lists now; nil when its `AccessPoints` cannot be read.
    private func accessPoints(of device: ObjectPath, owner: String) async -> [AccessPoint]? {
        let value: DBusValue
        do {
            value = try await calls.property(owner, device, Self.wirelessInterface, "AccessPoints")
        } catch {
            logger.warning("\(error)")
            return nil
        }
        guard let paths = value.objectPaths else {
            logger.warning("NetworkManager's AccessPoints of \(device) is \(value.signature), not ao")
            return nil
        }
        if paths.count > Self.maximumAccessPoints {
            logger.warning(
                "\(device) lists \(paths.count) access points; only the first \(Self.maximumAccessPoints) are read")
        }
        let logger = self.logger
        return await concurrently(Array(paths.prefix(Self.maximumAccessPoints)), atMost: Self.parallelReads) {
            [calls] path in
            do throws(PeerFailure) {
                let properties = try await calls.allProperties(owner, path, Self.accessPointInterface)
                return try Self.accessPoint(properties, bootTime: bootTimeSeconds())
            } catch {
                logger.warning("access point \(path) is left out: \(error)")
                return nil
            }
        }
    }

    /// The access point that NetworkManager's properties describe, its age measured against `bootTime`
    /// (seconds of `CLOCK_BOOTTIME`); fails when one that is needed is missing or of the wrong type.
    static func accessPoint(_ properties: [String: DBusValue], bootTime: Int64) throws(PeerFailure) -> AccessPoint {
        guard let address = properties["HwAddress"]?.string else {
            throw PeerFailure("its HwAddress is \(properties["HwAddress"]?.signature ?? "missing"), not s")
        }
        guard let bssid = BSSID(text: address) else { throw PeerFailure("its HwAddress \"\(address)\" is no BSSID") }
        guard let ssid = properties["Ssid"]?.bytes else {
            throw PeerFailure("its Ssid is \(properties["Ssid"]?.signature ?? "missing"), not ay")
        }
        guard case .byte(let strength) = properties["Strength"] else {
            throw PeerFailure("its Strength is \(properties["Strength"]?.signature ?? "missing"), not y")
        }
        var frequency: Int?
        if let value = properties["Frequency"] {
            guard let megahertz = value.uint32 else { throw PeerFailure("its Frequency is \(value.signature), not u") }
            frequency = Int(megahertz)
        }
        var age: Duration?
        if let value = properties["LastSeen"] {
            guard let seen = value.int32 else { throw PeerFailure("its LastSeen is \(value.signature), not i") }
            if seen >= 0 { age = .seconds(max(0, bootTime - Int64(seen))) }
        }
        return AccessPoint(
            bssid: bssid, ssid: ssid, signal: SignalStrength.dBm(fromQuality: Int(strength)), frequency: frequency,
            age: age)
    }
}
