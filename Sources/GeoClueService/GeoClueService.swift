import DBus
import Glibc
import Loop
import WhereaboutsCore
import WhereaboutsStorage

/// The GeoClue2-compatible service: the Manager, its clients and their Location objects on one connection.
///
/// It knows nothing of providers: the composition root feeds it fixes with ``deliver(_:)`` and the available
/// level with ``setAvailableLevel(_:)``, and learns through ``onDemandChanged`` which level the active
/// clients need.
@BusActor
public final class GeoClueService {
    /// The most clients one connection may hold (4096), the connections of one Unix user together (8192), and the
    /// service in all (65536); more fail with `LimitsExceeded`.
    public static let clientLimits = ShareLimits(perConnection: 4096, perUser: 8192, total: 65536)
    /// The most calls the service holds unanswered (waiting for a fix, polkit, logind, an agent or the caller's
    /// credentials) for one connection, for the connections of one Unix user together, and in all; a call past a
    /// limit fails at once with `LimitsExceeded`. `Start` is not counted: a client has at most one in progress.
    public static let heldCallLimits = HeldCallLedger<String>.Limits(perConnection: 256, perUser: 4096, total: 16384)
    /// What connections whose Unix user is not known yet (until the bus answers their first credentials lookup) may
    /// hold, as no user can be charged for it: each as much as any connection while such calls number fewer than
    /// 4096 in all, and 16 each past that. The system bus lets one user open 256 connections, so one user's new
    /// connections hold at most 4096 + 256 x 16 = 8192 calls, and cannot fill the total.
    public static let heldCallsUntilIdentified = HeldCallLedger<String>.UntilIdentified(inAll: 4096, perConnection: 16)

    let connection: Connection
    let configuration: Configuration
    let clock: any WhereaboutsCore.Clock
    /// Where the clients' and polkit's timers are armed: the event loop, or a manual clock in tests.
    let timers: any TimerScheduler
    let logger: any Logger

    let authoriser: (any Authoriser)?
    /// polkit's answers reused, and its checks bounded in number (``PolkitGate``); nil without polkit.
    let polkit: PolkitGate?
    private let grantFile: GrantFile?
    let servicesSwitch: ServicesSwitchFile?
    let staticLocationFile: StaticLocationOverrideFile?
    /// The location `SetStaticLocation` set, served in the place of the static source's file.
    var staticLocation: StaticLocation?
    /// Called with the location `SetStaticLocation` set (nil: cleared), and at ``start()`` with the one kept from
    /// before, so that the composition root has the static source serve it.
    public var onStaticLocationChanged: (@BusActor (StaticLocation?) -> Void)?
    /// `io.github.whereabouts1.Manager.LocationServicesEnabled`: while false no client gets any location.
    private(set) var servicesEnabled = true
    /// The users' stored decisions.
    var grants = GrantStore()
    private var manager: ManagerObject?
    var clients = ClientRegistry<ClientObject>(limits: GeoClueService.clientLimits)
    /// The user and process of each connection that asked for something, while it is connected.
    let peers: PeerCredentials
    /// The GeoClue agent of each user.
    var agents: [UInt32: Agent] = [:]
    /// The agents' log lines, a few per user and kind every 10 s: a user registering agents in a loop, or an agent
    /// changing its level without end, cannot flood the journal.
    var agentLines = RateLimiter<AgentLineKey>()
    /// logind's failures, logged a few times per user every 10 s: each call of a user's may meet the same failure.
    var logindWarnings = RateLimiter<UInt32>()
    /// Connections whose app cannot be told, logged a few times per user every 10 s.
    private var identityWarnings = RateLimiter<UInt32>()
    /// `Introspect` calls, 100 a second per user (or per connection whose user is not known yet, which sees only
    /// what is everyone's): a user's listing of its own thousands of clients costs a millisecond, and a flood of them
    /// would hold the bus thread from everyone else.
    var introspections = RateLimiter<IntrospectionCaller>(burst: 100, period: .seconds(1))
    /// How long an agent may take to answer.
    let agentTimeout: Duration
    /// The login sessions of client processes, for *when in use*.
    let sessions: SessionMonitor
    /// What the clients needing fixes add up to: `InUse`, `ActiveApps`, the providers' demand.
    let activity: ServiceActivity
    /// The best level the providers can deliver now.
    private var providersLevel: AccuracyLevel = .none
    /// The latest fix any provider produced.
    private(set) var lastFix: Fix?
    /// The copy of the fix last given to a Location object, for the next object given the same fix.
    private var lastShared: SharedFix?
    /// The regions the apps watch.
    private(set) lazy var regions = RegionWatch(service: self, store: regionStore)
    private let regionStore: RegionStore?
    /// Each user's history of location use.
    private(set) lazy var history = UsageHistory(service: self, store: historyStore)
    private let historyStore: HistoryStore?
    /// The satellites the receivers see, told to the clients that may see them.
    let sky: SkyBroadcast
    /// The calls held unanswered, counted against ``heldCallLimits``.
    var heldCalls = HeldCallLedger<String>(
        limits: GeoClueService.heldCallLimits, untilIdentified: GeoClueService.heldCallsUntilIdentified)

    /// Called with the highest level any client needing fixes is served at, or nil when none needs any.
    public var onDemandChanged: (@BusActor (AccuracyLevel?) -> Void)? {
        get { activity.onDemandChanged }
        set { activity.onDemandChanged = newValue }
    }
    /// Called with the smallest `TimeThreshold` (seconds) of the clients served at exact level whenever it changes,
    /// nil when no client is: a modem's satellite receiver is paced by it, as GeoClue paces it.
    public var onExactTimeThresholdChanged: (@BusActor (UInt32?) -> Void)? {
        get { activity.onExactTimeThresholdChanged }
        set { activity.onExactTimeThresholdChanged = newValue }
    }
    /// Called when a single-shot request (`RequestLocation`) starts waiting while the providers already run: a
    /// provider whose position is still current, but changes seldom (Wi-Fi, IP), may offer it again at once
    /// rather than at its next change.
    public var onFreshFixWanted: (@BusActor () -> Void)?
    /// The providers as `io.github.whereabouts1.Manager.Providers` lists them: kind, level, available, running.
    public var providerStatus: (@BusActor () -> [ProviderStatus])?
    /// Plays recorded tracks for `Simulate`; nil: the service cannot simulate.
    public var simulator: (any TrackSimulator)?
    /// The simulation `Simulate` started, while it runs.
    var simulation: RunningSimulation?
    /// Called with the number of clients whenever it changes (for the idle exit).
    public var onClientCountChanged: (@BusActor (Int) -> Void)?
    /// Called when a connection that called the service but holds no client left the bus: thousands of them
    /// leaving after their clients (a burst of apps closing) run code after the clients' count last changed.
    public var onClientlessPeerLeft: (@BusActor () -> Void)?

    /// A service on `connection`, reading the time from `clock` and arming its timers on `timers`; `authoriser` is
    /// polkit (nil: the configuration, the stored decisions and the users' GeoClue agents decide, as in GeoClue),
    /// `grantFile` keeps the users' decisions, `servicesSwitch` the location services switch,
    /// `staticLocationFile` the location `SetStaticLocation` set, `regionStore` the regions the apps watch and
    /// `historyStore` the users' histories of location use.
    public init(
        connection: Connection, configuration: Configuration, clock: any WhereaboutsCore.Clock,
        timers: any TimerScheduler, logger: any Logger,
        authoriser: (any Authoriser)? = nil, grantFile: GrantFile? = nil, servicesSwitch: ServicesSwitchFile? = nil,
        staticLocationFile: StaticLocationOverrideFile? = nil, regionStore: RegionStore? = nil,
        historyStore: HistoryStore? = nil
    ) {
        self.connection = connection
        self.configuration = configuration
        self.clock = clock
        self.timers = timers
        activity = ServiceActivity(connection: connection)
        peers = PeerCredentials(connection: connection)
        sky = SkyBroadcast(clock: clock, timers: timers)
        self.logger = logger
        self.authoriser = authoriser
        polkit = authoriser.map {
            PolkitGate(authoriser: $0, connection: connection, clock: clock, timers: timers, logger: logger)
        }
        self.grantFile = grantFile
        self.servicesSwitch = servicesSwitch
        self.staticLocationFile = staticLocationFile
        self.regionStore = regionStore
        self.historyStore = historyStore
        staticLocation = staticLocationFile?.load(now: clock.wallNow) { logger.error($0) }
        if let grantFile { grants = grantFile.load(now: clock.wallNow) { logger.error($0) } }
        if let servicesSwitch { servicesEnabled = servicesSwitch.load(now: clock.wallNow) { logger.error($0) } }
        if !servicesEnabled { logger.notice("location services are switched off") }
        agentTimeout = GeoClueService.agentTimeoutFromEnvironment() ?? GeoClueService.defaultAgentTimeout
        sessions = SessionMonitor(connection: connection, logger: logger)
        sessions.onChange = { [weak self] path, active in self?.sessionChanged(path, active: active) }
        peers.onIdentified = { [weak self] name, uid in
            self?.heldCalls.identify(name, as: uid)
            self?.connection.regroupCalls(of: name)
        }
        peers.onUnidentifiable = { [weak self] uid, line in
            guard let self, let line = identityWarnings.line(line, for: uid, now: clock.monotonicNow) else { return }
            logger.warning(line)
        }
        sky.onPublish = { [weak self] satellites in
            guard let self else { return }
            for client in clients.all { client.skyPublished(satellites) }
        }
    }

    /// `WHEREABOUTS_AGENT_TIMEOUT_MS`, when set to a whole number of milliseconds.
    private static func agentTimeoutFromEnvironment() -> Duration? {
        guard let text = getenv("WHEREABOUTS_AGENT_TIMEOUT_MS"), let milliseconds = Int(String(cString: text)),
            milliseconds > 0
        else { return nil }
        return .milliseconds(milliseconds)
    }

    /// `AvailableAccuracyLevel`: the providers' best level, or none while location services are off.
    var availableLevel: AccuracyLevel { servicesEnabled ? providersLevel : .none }

    /// Hands the stored decisions to the grants file's writer (``GrantFile``) and returns at once: the bus thread
    /// never waits for the disk, and a flood of decisions costs a write per write's duration, not one each.
    ///
    /// A caller that replies to a decision awaits the returned write's ``GrantFile/Write/ended()`` first, so that a
    /// confirmed decision is durable (it waits for at most the write in flight and the next). A failure is logged,
    /// once per failed write, and the decisions stay in memory.
    @discardableResult
    func saveGrants() -> GrantFile.Write? {
        guard let grantFile else { return nil }
        let write = grantFile.save(grants)
        BusActor.task { [logger] in
            if let failure = await write.ended() {
                logger.error("grants: cannot save: \(failure); the decision holds until the service stops")
            }
        }
        return write
    }

    /// Exports the Manager and the clients' subtree, starts watching for vanished peers and takes the name
    /// `org.freedesktop.GeoClue2`.
    public func start() async throws(DBusError) {
        if let staticLocation { onStaticLocationChanged?(staticLocation) }
        let manager = ManagerObject(service: self)
        self.manager = manager
        connection.export(manager, at: GeoClue.managerPath)
        connection.exportSubtree(ClientTree(service: self), at: GeoClue.clientRoot)
        do throws(DBusError) {
            try connection.boundSocketBacklog()
        } catch {
            logger.warning("bus: \(error.message); another user's calls may wait behind answers the bus has not read")
        }
        // One user's connections share its turns, so that opening many cannot keep another user's calls waiting;
        // connections whose user is not known yet share one group, and the bus is asked whose they are at once,
        // whether or not their calls need it.
        connection.turnGroup = { [weak self] sender in
            let unknown = "user not known yet"
            guard let self else { return unknown }
            if let uid = peers.knownUser(of: sender) { return "UID \(uid)" }
            peers.lookUp(sender)
            return unknown
        }
        connection.introspectionGate = { [weak self] sender in self?.admitIntrospection(from: sender) }
        connection.introspectionView = { [weak self] call throws(DBusError) in
            guard let self else { return .own }
            return try await introspectionView(for: call)
        }
        // The rule that follows peers leaving goes out first, so it is in place before any client can call; the
        // name is asked for before its answer arrives.
        let connection = self.connection
        let (_, reply) = try await connection.subscribe(
            SignalMatch(
                sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                stringArguments: [2: ""]),
            handler: { [weak self] message in
                guard let name = message.arguments().first?.string else { return }
                self?.peerVanished(name)
            },
            whileRunning: { () async throws(DBusError) in try await connection.requestName(GeoClue.busName) })
        guard reply == .primaryOwner || reply == .alreadyOwner else {
            throw .failed("\(GeoClue.busName) is already owned by another process")
        }
        regions.start()
        history.start()
    }

    /// The number of clients.
    public var clientCount: Int { clients.count }

    /// The copy of `fix` a Location object keeps: the last one made, when it holds the same fix, so that every client
    /// given one fix shares one copy; a fix coarsened for a client differs, and gets a copy of its own.
    func share(_ fix: Fix) -> SharedFix {
        if let lastShared, lastShared.fix == fix { return lastShared }
        let made = SharedFix(fix)
        lastShared = made
        return made
    }

    /// True while any app's region or pending event is kept: they are watched whenever they exist, so the idle exit
    /// waits.
    public var keepsRegions: Bool { regions.isKeeping }

    /// Called when ``keepsRegions`` changes.
    public var onKeepsRegionsChanged: (@BusActor (Bool) -> Void)? {
        get { regions.onKeepingChanged }
        set { regions.onKeepingChanged = newValue }
    }

    /// Serves a new fix to every active client.
    public func deliver(_ fix: Fix) {
        lastFix = fix
        for client in clients.all where client.isServing { client.offer(fix) }
        regions.observe(fix)
    }

    /// Takes the satellites the running receivers see (`io.github.whereabouts1.Client.Satellites`), told to the
    /// owners of the clients that may see them at most once a second (`SatellitesChanged`).
    public func skyChanged(_ satellites: [Satellite]) { sky.offer(satellites) }

    /// Takes the providers' best level, emitting `PropertiesChanged` when `AvailableAccuracyLevel` changes;
    /// `reason` says why none can deliver (`AvailabilityChanged(false, reason)`), `provider-lost` when nil.
    public func setAvailableLevel(_ level: AccuracyLevel, reason unavailabilityReason: String? = nil) {
        let before = availableLevel
        providersLevel = level
        guard availableLevel != before else { return }
        emitAvailableLevel()
        let reason = level == .none ? unavailabilityReason ?? "provider-lost" : "provider-available"
        activity.inOneUpdate {
            for client in clients.all { client.providersAvailabilityChanged(level != .none, reason: reason) }
        }
        if level == .none { regions.undecidable() }
    }

    func emitAvailableLevel() {
        connection.emitPropertiesChanged(
            path: GeoClue.managerPath, interface: GeoClue.managerInterface,
            changed: ["AvailableAccuracyLevel": .uint32(availableLevel.rawValue)])
    }

    /// Switches location services on or off, telling everyone and every client; see ``switchServices(_:enabled:)``.
    func setServicesEnabled(_ enabled: Bool) {
        guard enabled != servicesEnabled else { return }
        servicesEnabled = enabled
        if let servicesSwitch {
            do {
                try servicesSwitch.save(enabled: enabled)
            } catch {
                logger.error("location services switch: cannot save: \(error); it holds until the service stops")
            }
        }
        logger.notice("location services switched \(enabled ? "on" : "off")")
        connection.emitPropertiesChanged(
            path: GeoClue.managerPath, interface: Whereabouts.managerInterface,
            changed: ["LocationServicesEnabled": .boolean(enabled)])
        if providersLevel != .none { emitAvailableLevel() }
        regions.updateDemand()
        activity.inOneUpdate {
            for client in clients.all {
                if enabled {
                    client.release(.servicesDisabled, reason: "services-enabled")
                } else {
                    client.hold(.servicesDisabled, reason: "services-disabled")
                }
            }
        }
    }
}
