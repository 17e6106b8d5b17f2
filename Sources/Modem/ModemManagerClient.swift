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

    private let connection: Connection
    private let logger: any Logger
    /// ModemManager's unique name, nil while it is not running.
    private var owner: String?
    /// Bumped whenever the owner changes: an answer to a call made before is out of date.
    private var generation = 0
    private var modems: [ObjectPath: ModemRecord] = [:]
    private var needs: [ModemLocationConsumer: ModemLocationSources] = [:]
    private var refreshRate: UInt32 = 0
    private var observers: [@BusActor (ModemLocationEvent) -> Void] = []
    private var lastReasons: [String?] = []
    private var badValues = 0

    /// A client on `connection` (the system bus); ``start()`` begins following ModemManager.
    public init(connection: Connection, logger: any Logger) {
        self.connection = connection
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
            summaries[name] = modem.stateName + sources
        }
        return summaries
    }

    /// The union of what the consumers need.
    private var needed: ModemLocationSources { needs.values.reduce([]) { $0.union($1) } }

    /// The reason for each source, to tell when availability changed.
    private var reasons: [String?] {
        [ModemLocationSources.gpsNMEA, .threeGPPCell, .cdmaBaseStation].map { unavailability(of: $0) }
    }

    private func announceAvailability() {
        let now = reasons
        guard now != lastReasons else { return }
        lastReasons = now
        emit(.availabilityChanged)
    }

    private func emit(_ event: ModemLocationEvent) {
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

    // MARK: Signals

    private func objectsChanged(_ message: Message) {
        guard let owner, message.sender == owner else { return }
        let arguments = message.arguments()
        switch message.member {
        case "InterfacesAdded":
            guard arguments.count == 2, let path = arguments[0].objectPath,
                case .dictionary(key: "s", value: "a{sv}", let interfaces) = arguments[1]
            else { return badValue("InterfacesAdded with (\(message.signature))") }
            added(path, interfaces)
        case "InterfacesRemoved":
            guard arguments.count == 2, let path = arguments[0].objectPath,
                let names = arguments[1].elements?.compactMap(\.string)
            else { return badValue("InterfacesRemoved with (\(message.signature))") }
            removed(path, names)
        default:
            return
        }
        announceAvailability()
    }

    /// Takes the interfaces (`a{sa{sv}}` entries) an object gained.
    private func added(_ path: ObjectPath, _ interfaces: [DBusValue.DictEntry]) {
        var modem = modems[path]
        for interface in interfaces {
            guard let name = interface.key.string, let properties = interface.value.stringKeyedEntries else {
                continue
            }
            switch name {
            case Self.modemInterface:
                if modem == nil { logger.info("modems: \(path) appeared") }
                var record = modem ?? ModemRecord()
                apply(modemProperties: properties, to: &record, at: path)
                modem = record
            case Self.locationInterface:
                var record = modem ?? ModemRecord()
                var location = LocationRecord()
                _ = apply(locationProperties: properties, to: &location, at: path)
                record.location = location
                modem = record
            default:
                continue
            }
        }
        guard let modem else { return }
        modems[path] = modem
        if let values = modem.location?.lastValues { passOn(values, from: path, changed: Set(values.keys)) }
        setUp(path)
    }

    private func removed(_ path: ObjectPath, _ names: [String]) {
        guard modems[path] != nil else { return }
        let reported = modems[path]?.location.map { Array($0.lastValues.keys) } ?? []
        if names.contains(Self.modemInterface) {
            modems[path] = nil
            logger.info("modems: \(path) is gone")
            emitGone(reported, at: path)
        } else if names.contains(Self.locationInterface) {
            modems[path]?.location = nil
            emitGone(reported, at: path)
        }
    }

    /// Tells the observers that what the modem at `path` reported for the sources `keys` no longer holds.
    private func emitGone(_ keys: [UInt32], at path: ObjectPath) {
        let sources = keys.reduce(into: ModemLocationSources()) { $0.insert(ModemLocationSources(rawValue: $1)) }
        guard !sources.isEmpty else { return }
        emit(.locationGone(sources, modem: path.rawValue))
    }

    private func propertiesChanged(_ message: Message) {
        guard let owner, message.sender == owner, let path = message.path, var modem = modems[path] else { return }
        let arguments = message.arguments()
        guard arguments.count == 3, let interface = arguments[0].string,
            let changed = arguments[1].stringKeyedEntries
        else { return badValue("PropertiesChanged on \(path) with (\(message.signature))") }
        switch interface {
        case Self.modemInterface:
            let before = modem
            apply(modemProperties: changed, to: &modem, at: path)
            modems[path] = modem
            if modem.state != before.state {
                logger.info("modems: \(path) is \(modem.stateName)")
                modems[path]?.location?.forgetFailures()
                setUp(path)
            }
            if modem.accessTechnologies != before.accessTechnologies,
                case .string(let cell)? = modem.location?.lastValues[ModemLocationSources.threeGPPCell.rawValue]
            {
                emit(.location(.servingCell(cell, modem.accessTechnologies, modem: path.rawValue)))
            }
        case Self.locationInterface:
            guard var location = modem.location else { return }
            let before = location.lastValues
            let changedKeys = apply(locationProperties: changed, to: &location, at: path)
            modem.location = location
            modems[path] = modem
            passOn(
                location.lastValues, from: path, changed: changedKeys.filter { before[$0] != location.lastValues[$0] })
            emitGone(before.keys.filter { location.lastValues[$0] == nil }, at: path)
            setUp(path)
        default:
            return
        }
        announceAvailability()
    }

    // MARK: Properties

    private func apply(
        modemProperties properties: [String: DBusValue], to modem: inout ModemRecord, at path: ObjectPath
    ) {
        if let value = properties["State"] {
            if let state = value.int32 { modem.state = state } else { badValue("\(path): State is \(value.signature)") }
        }
        if let value = properties["AccessTechnologies"] {
            if let bits = value.uint32 {
                modem.accessTechnologies = AccessTechnologies(rawValue: bits)
            } else {
                badValue("\(path): AccessTechnologies is \(value.signature)")
            }
        }
    }

    /// Applies Location interface properties; returns the `Location` keys it read.
    private func apply(
        locationProperties properties: [String: DBusValue], to location: inout LocationRecord, at path: ObjectPath
    ) -> Set<UInt32> {
        for (name, value) in properties {
            switch name {
            case "Capabilities", "Enabled":
                guard let bits = value.uint32 else {
                    badValue("\(path): \(name) is \(value.signature)")
                    continue
                }
                if name == "Capabilities" {
                    location.capabilities = ModemLocationSources(rawValue: bits)
                } else {
                    location.enabled = ModemLocationSources(rawValue: bits)
                    location.ours.formIntersection(location.enabled)
                }
            case "SignalsLocation":
                if let flag = value.bool {
                    location.signals = flag
                    location.turnedSignalsOn = location.turnedSignalsOn && flag
                } else {
                    badValue("\(path): \(name) is \(value.signature)")
                }
            default:
                continue
            }
        }
        guard let value = properties["Location"] else { return [] }
        guard case .dictionary(key: "u", value: "v", let entries) = value else {
            badValue("\(path): Location is \(value.signature), not a{uv}")
            return []
        }
        var keys: Set<UInt32> = []
        var values: [UInt32: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.uint32 else { continue }
            values[key] = entry.value.unwrapped
            keys.insert(key)
        }
        location.lastValues = values
        return keys
    }

    /// Passes the `Location` entries among `changed` on to the observers, checked for type.
    private func passOn(_ values: [UInt32: DBusValue], from path: ObjectPath, changed: Set<UInt32>) {
        guard let modem = modems[path] else { return }
        for key in changed.sorted() {
            guard let value = values[key] else { continue }
            switch ModemLocationSources(rawValue: key) {
            case .threeGPPCell:
                guard let text = value.string else {
                    badValue("\(path): 3GPP location is \(value.signature)")
                    continue
                }
                emit(.location(.servingCell(text, modem.accessTechnologies, modem: path.rawValue)))
            case .gpsNMEA:
                guard let text = value.string else {
                    badValue("\(path): NMEA location is \(value.signature)")
                    continue
                }
                emit(.location(.nmea(text, modem: path.rawValue)))
            case .cdmaBaseStation:
                guard let fields = value.stringKeyedEntries, let latitude = fields["latitude"]?.double,
                    let longitude = fields["longitude"]?.double
                else {
                    badValue("\(path): CDMA base station location is \(value.signature)")
                    continue
                }
                emit(.location(.cdmaBaseStation(latitude: latitude, longitude: longitude, modem: path.rawValue)))
            default:
                continue
            }
        }
    }

    private func badValue(_ what: String) {
        badValues += 1
        if badValues == 1 || badValues.isMultiple(of: 100) {
            logger.warning("modems: ignoring \(what) from ModemManager; \(badValues) bad values so far")
        }
    }

    // MARK: Setup and refresh rate

    /// Sets up on the modem at `path` what the consumers need of what it offers, if that is not what it has.
    private func setUp(_ path: ObjectPath) {
        guard let owner, let modem = modems[path], modem.isEnabled, let location = modem.location,
            !location.setupInFlight
        else { return }
        let wanted = needed.intersection(location.capabilities)
        let others = location.enabled.subtracting(location.ours)
        let target = others.union(wanted)
        let signals = wanted.isEmpty ? location.signals && !location.turnedSignalsOn : true
        let turnsSignalsOn = signals && (location.turnedSignalsOn || !location.signals)
        guard target != location.enabled || signals != location.signals else {
            pace(path)
            return
        }
        if let failed = location.failedSetup, failed.sources == target, failed.signals == signals { return }
        modems[path]?.location?.setupInFlight = true
        callLocation("Setup", [.uint32(target.rawValue), .boolean(signals)], at: path, of: owner) { client, error in
            client.setUpEnded(
                path, target: target, others: others, signals: signals, turnsSignalsOn: turnsSignalsOn, error: error)
        }
    }

    /// Calls `member` of the `Modem.Location` interface of the modem at `path` on ModemManager (`owner`), then
    /// hands its error (nil: it succeeded) to `ended`, unless ModemManager left or came back meanwhile.
    private func callLocation(
        _ member: String, _ arguments: [DBusValue], at path: ObjectPath, of owner: String,
        then ended: @escaping @BusActor (ModemManagerClient, DBusError?) -> Void
    ) {
        let generation = self.generation
        BusActor.task { [weak self] in
            guard let self else { return }
            let result: DBusError?
            do throws(DBusError) {
                _ = try await self.connection.call(
                    destination: owner, path: path, interface: Self.locationInterface, member: member,
                    arguments: arguments, timeout: Self.callTimeout)
                result = nil
            } catch {
                result = error
            }
            guard generation == self.generation else { return }
            ended(self, result)
        }
    }

    private func setUpEnded(
        _ path: ObjectPath, target: ModemLocationSources, others: ModemLocationSources, signals: Bool,
        turnsSignalsOn: Bool, error: DBusError?
    ) {
        guard var location = modems[path]?.location else { return }
        location.setupInFlight = false
        if let error {
            location.failedSetup = (target, signals)
            if error.name == Self.unauthorised {
                if !location.refused {
                    logger.error(
                        "modems: ModemManager refuses to set up location sources \(target) on \(path): polkit does not "
                            + "grant this service's user org.freedesktop.ModemManager1.Device.Control (\(error)); the "
                            + "rule \(Self.polkitRule), which the package installs, grants it to the user whereabouts")
                }
                location.refused = true
            } else {
                logger.warning("modems: cannot set up location sources \(target) on \(path): \(error)")
            }
        } else {
            logger.info("modems: \(path): location sources \(target)\(signals ? ", signalled" : "")")
            location.failedSetup = nil
            location.refused = false
            location.ours = target.subtracting(others)
            location.enabled = target
            location.signals = signals
            location.turnedSignalsOn = turnsSignalsOn
        }
        modems[path]?.location = location
        announceAvailability()
        setUp(path)
    }

    /// Sets the GNSS refresh rate on the modem at `path` if its receiver is needed and the rate is not set yet, nor
    /// being set, nor failed to be set.
    private func pace(_ path: ObjectPath) {
        guard let owner, let location = modems[path]?.location, !location.refused, !location.pacingInFlight,
            !location.enabled.intersection(needed).isDisjoint(with: .gps), location.refreshRate != refreshRate,
            location.failedRefreshRate != refreshRate
        else { return }
        let rate = refreshRate
        modems[path]?.location?.pacingInFlight = true
        callLocation("SetGpsRefreshRate", [.uint32(rate)], at: path, of: owner) { client, error in
            client.paceEnded(path, rate: rate, error: error)
        }
    }

    /// Takes the answer to `SetGpsRefreshRate(rate)`, then paces again in case the rate wanted changed meanwhile.
    private func paceEnded(_ path: ObjectPath, rate: UInt32, error: DBusError?) {
        guard var location = modems[path]?.location, location.pacingInFlight else { return }
        location.pacingInFlight = false
        if let error {
            location.failedRefreshRate = rate
            logger.warning("modems: cannot set the GNSS refresh rate of \(path) to \(rate) s: \(error)")
        } else {
            location.refreshRate = rate
            location.failedRefreshRate = nil
            logger.info("modems: \(path): GNSS refresh rate \(rate) s")
        }
        modems[path]?.location = location
        pace(path)
    }
}
