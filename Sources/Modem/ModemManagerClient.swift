import DBus
import Loop
import WhereaboutsCore
import WhereaboutsProviders

/// The modems' location through ModemManager (`org.freedesktop.ModemManager1` on the system bus), for the modem
/// providers (``ModemLocationService``).
///
/// **Following the modems.** ModemManager's owner is looked up with `GetNameOwner` (which never starts it) and
/// followed through `NameOwnerChanged`; while it runs, its object manager lists the modems (`GetManagedObjects`,
/// then `InterfacesAdded` and `InterfacesRemoved`), and `PropertiesChanged` keeps each modem's `State`,
/// `AccessTechnologies` and Location interface (`Capabilities`, `Enabled`, `SignalsLocation`, `Location`) current.
/// Every call goes to the owner's unique name, asynchronously: nothing waits on the bus thread. When ModemManager
/// leaves, every modem is forgotten; when it comes back it is asked afresh.
///
/// **Setting up.** On each enabled modem, `Setup` is called with the sources the consumers need that the modem
/// offers, together with those something else had enabled, and signalling on: ModemManager then sends
/// `PropertiesChanged` for `Location`. Sources no consumer needs any longer are released (turned off again, if
/// this service turned them on); once none is needed, signalling goes back off if this service turned it on, so
/// that the modem stops publishing its location on the bus. `SetGpsRefreshRate` follows ``setGPSRefreshRate(_:)``
/// on modems whose GNSS receiver is needed, one call at a time, the rate counting as set once the call succeeded.
/// A `Setup` or `SetGpsRefreshRate` that fails is not repeated until what is needed changes or the modem's state
/// does (or, for the rate, the rate wanted); polkit's refusal (`Error.Core.Unauthorized`) is logged once, naming
/// the rule that grants the service's user ModemManager's action.
///
/// **Assisting the receiver.** With a ``GNSSAssistance``, before a `Setup` turns a modem's receiver on, the SUPL
/// server configured is set (`SetSuplServer`, once per modem) and, on a modem whose `SupportedAssistanceData` has
/// XTRA, the predicted-orbit file for its `AssistanceDataServers` is injected (`InjectAssistanceData`, once per
/// modem and file); then `Setup` follows, whether that worked or not.
///
/// **Bad values.** A property of the wrong type, a `Location` entry that is not what ModemManager sends, or a
/// malformed reply is logged (the first, then every hundredth) and ignored.
@BusActor
public final class ModemManagerClient: ModemLocationService {
    static let busName = "org.freedesktop.ModemManager1"
    static let managerPath = ObjectPath("/org/freedesktop/ModemManager1")!
    static let busPath = ObjectPath("/org/freedesktop/DBus")!
    static let modemInterface = "org.freedesktop.ModemManager1.Modem"
    static let locationInterface = "org.freedesktop.ModemManager1.Modem.Location"
    static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    /// The error ModemManager answers with when polkit refuses the caller.
    static let unauthorised = "org.freedesktop.ModemManager1.Error.Core.Unauthorized"
    /// The polkit rule file the package installs, named in the log line when polkit refuses.
    public static let polkitRule = "/usr/share/polkit-1/rules.d/io.github.whereabouts1-modemmanager.rules"
    /// How long one call to ModemManager may take.
    static let callTimeout = Duration.seconds(25)

    let connection: Connection
    let logger: any Logger
    /// ModemManager's unique name, nil while it is not running.
    private(set) var owner: String?
    /// Bumped whenever the owner changes: an answer to a call made before is out of date.
    private(set) var generation = 0
    var modems: [ObjectPath: ModemRecord] = [:]
    private var needs: [ModemLocationConsumer: ModemLocationSources] = [:]
    private(set) var refreshRate: UInt32 = 0
    private var observers: [@BusActor (ModemLocationEvent) -> Void] = []
    private var lastReasons: [String?] = []
    var badValues = 0
    /// What assists the receivers before they are set up; nil: nothing does.
    let assistance: (any GNSSAssistance)?
    /// The number of the last preparation of a receiver (``prepareReceiver(_:)``).
    var preparations = 0

    /// A client on `connection` (the system bus), assisting the receivers with `assistance`; ``start()`` begins
    /// following ModemManager.
    public init(connection: Connection, assistance: (any GNSSAssistance)? = nil, logger: any Logger) {
        self.connection = connection
        self.assistance = assistance
        self.logger = logger
        lastReasons = reasons
    }

    /// Subscribes to ModemManager's signals and looks its modems up; a failure is logged, and the modems stay
    /// unknown (`no-modem`).
    public func start() async {
        do {
            _ = try await connection.subscribe(
                SignalMatch(
                    sender: "org.freedesktop.DBus", path: Self.busPath, interface: "org.freedesktop.DBus",
                    member: "NameOwnerChanged", stringArguments: [0: Self.busName])
            ) { [weak self] message in self?.ownerChanged(message) }
            _ = try await connection.subscribe(
                SignalMatch(sender: Self.busName, path: Self.managerPath, interface: Self.objectManagerInterface)
            ) { [weak self] message in self?.objectsChanged(message) }
            _ = try await connection.subscribe(
                SignalMatch(sender: Self.busName, interface: Self.propertiesInterface, member: "PropertiesChanged")
            ) { [weak self] message in self?.propertiesChanged(message) }
            let reply = try await connection.call(
                destination: "org.freedesktop.DBus", path: Self.busPath, interface: "org.freedesktop.DBus",
                member: "GetNameOwner", arguments: [.string(Self.busName)], timeout: Self.callTimeout)
            if generation == 0, let unique = reply.first?.string { setOwner(unique) }
        } catch {
            if error.name == DBusError.Name.nameHasNoOwner {
                logger.info("modems: ModemManager is not running; waiting for it")
            } else {
                logger.warning("modems: cannot follow ModemManager: \(error)")
            }
        }
    }

    // MARK: ModemLocationService

    public func unavailability(of source: ModemLocationSources) -> String? {
        guard owner != nil, !modems.isEmpty else { return "no-modem" }
        let candidates = modems.values.filter { $0.location.map { $0.capabilities.isSuperset(of: source) } ?? true }
        if candidates.contains(where: { $0.canDeliver(source) }) { return nil }
        if candidates.isEmpty { return "modem-unsupported" }
        if candidates.contains(where: { $0.isEnabled && $0.location?.refused == true }) { return "modem-unauthorised" }
        if candidates.contains(where: { $0.state == ModemState.locked }) { return "modem-locked" }
        if candidates.contains(where: { !$0.isEnabled }) { return "modem-disabled" }
        return "modem-unsupported"
    }

    public func observe(_ observer: @escaping @BusActor (ModemLocationEvent) -> Void) {
        observers.append(observer)
    }

    public func setNeeded(_ sources: ModemLocationSources, by consumer: ModemLocationConsumer) {
        guard needs[consumer, default: []] != sources else { return }
        needs[consumer] = sources
        for path in modems.keys {
            modems[path]?.location?.forgetFailures()
            setUp(path)
        }
    }

    public func setGPSRefreshRate(_ seconds: UInt32) {
        guard seconds != refreshRate else { return }
        refreshRate = seconds
        for path in modems.keys { pace(path) }
    }

    public var modemSummaries: [String: String] {
        var summaries: [String: String] = [:]
        for (path, modem) in modems {
            let name =
                path.rawValue.hasPrefix(Self.managerPath.rawValue + "/")
                ? String(path.rawValue.dropFirst(Self.managerPath.rawValue.count + 1)) : path.rawValue
            let sources = modem.location.map { "; sources \($0.enabled)" } ?? "; no location interface"
            let orbits = modem.location?.tookOrbits.map { "; predicted orbits \($0 ? "injected" : "refused")" } ?? ""
            summaries[name] = modem.stateName + sources + orbits
        }
        return summaries
    }

    /// The union of what the consumers need.
    var needed: ModemLocationSources { needs.values.reduce([]) { $0.union($1) } }

    /// The reason for each source, to tell when availability changed.
    private var reasons: [String?] {
        [ModemLocationSources.gpsNMEA, .threeGPPCell, .cdmaBaseStation].map { unavailability(of: $0) }
    }

    func announceAvailability() {
        let now = reasons
        guard now != lastReasons else { return }
        lastReasons = now
        emit(.availabilityChanged)
    }

    func emit(_ event: ModemLocationEvent) {
        for observer in observers { observer(event) }
    }

    // MARK: ModemManager coming and going

    private func ownerChanged(_ message: Message) {
        guard message.sender == "org.freedesktop.DBus" else { return }
        let arguments = message.arguments()
        guard arguments.count == 3, arguments[0].string == Self.busName, let new = arguments[2].string else { return }
        setOwner(new.isEmpty ? nil : new)
    }

    private func setOwner(_ new: String?) {
        generation += 1
        guard new != owner else { return }
        if owner != nil { logger.notice("modems: ModemManager left the bus; no modem until it is back") }
        owner = new
        let left = modems
        modems = [:]
        for (path, modem) in left { emitGone(modem.location.map { Array($0.lastValues.keys) } ?? [], at: path) }
        announceAvailability()
        guard let new else { return }
        let generation = self.generation
        BusActor.task { [weak self] in await self?.loadObjects(from: new, generation: generation) }
    }

    private func loadObjects(from owner: String, generation: Int) async {
        let reply: [DBusValue]
        do {
            reply = try await connection.call(
                destination: owner, path: Self.managerPath, interface: Self.objectManagerInterface,
                member: "GetManagedObjects", timeout: Self.callTimeout)
        } catch {
            guard generation == self.generation else { return }
            logger.warning("modems: ModemManager does not list its modems: \(error)")
            return
        }
        guard generation == self.generation else { return }
        guard reply.count == 1, case .dictionary(key: "o", value: "a{sa{sv}}", let entries) = reply[0] else {
            badValue("GetManagedObjects answered (\(reply.map(\.signature).joined()))")
            return
        }
        for entry in entries {
            guard let path = entry.key.objectPath, case .dictionary(_, _, let interfaces) = entry.value else {
                continue
            }
            added(path, interfaces)
        }
        logger.info("modems: ModemManager lists \(modems.count) modem\(modems.count == 1 ? "" : "s")")
        announceAvailability()
    }
}
