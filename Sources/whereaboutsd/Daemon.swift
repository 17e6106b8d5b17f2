import Compass
import DBus
import GPSD
import GeoClueService
import Glibc
import Loop
import LoopScheduling
import Polkit
import WhereaboutsCore
import WhereaboutsProviders
import WhereaboutsStorage

/// The composition root: configuration, bus connection, service and providers, wired together.
@BusActor
enum Daemon {
    private static var idleTimer: TimerID?
    private static var memoryReleaseTimer: TimerID?
    /// The most clients served at once since memory was last handed back.
    private static var clientPeak = 0
    /// How long the number of clients must hold still before memory is handed back.
    private static let memoryReleaseDelay = Duration.seconds(1)
    /// How far the clients must fall below their peak (and to at most half of it) for the heap to be trimmed while
    /// some are left.
    private static let heapReleaseDrop = 512

    /// Starts everything on the bus thread; a failure to start ends the process with status 1.
    nonisolated static func launch(_ options: Options) {
        let terminationSignals = Shutdown.catchTerminationSignals()
        signal(SIGPIPE, SIG_IGN)
        EventLoop.main.execute {
            if let terminationSignals { Shutdown.watchTerminationSignals(terminationSignals) }
            do {
                try run(options)
            } catch {
                JournalLogger().error("\(error)")
                Shutdown.exit(1)
            }
        }
    }

    private static func run(_ options: Options) throws {
        let logger = JournalLogger()
        let configuration = try loadConfiguration(options, logger: logger)
        let clock = SystemClock()
        let connection = try Connection.open(address: Connection.systemBusAddress)
        connection.onDisconnect = {
            logger.error("lost the connection to the bus; exiting")
            Shutdown.exit(1)
        }
        let authorisation = configuration.authorisation
        if !authorisation.usesPolkit {
            logger.notice(
                "[authorisation] polkit=false: app entries, stored decisions and GeoClue agents decide which apps get location"
            )
        }
        let grantFile = GrantFile(path: authorisation.grantsPath)
        Shutdown.flushBeforeExit { grantFile.flush() }
        let regionStore = RegionStore(besideGrantsAt: authorisation.grantsPath) { failure in
            logger.error("regions: cannot save: \(failure)")
        }
        let historyStore = HistoryStore(besideGrantsAt: authorisation.grantsPath) { failure in
            logger.error("history: cannot save: \(failure)")
        }
        let service = GeoClueService(
            connection: connection, configuration: configuration, clock: clock, timers: EventLoop.main, logger: logger,
            authoriser: authorisation.usesPolkit ? PolkitAuthority() : nil,
            grantFile: grantFile,
            servicesSwitch: ServicesSwitchFile(besideGrantsAt: authorisation.grantsPath),
            staticLocationFile: StaticLocationOverrideFile(besideGrantsAt: authorisation.grantsPath),
            regionStore: regionStore, historyStore: historyStore)
        Shutdown.flushBeforeExit {
            service.saveRegionsNow()
            regionStore.flush()
        }
        Shutdown.flushBeforeExit {
            service.saveHistoryNow()
            historyStore.flush()
        }
        // One routing socket, opened when a network provider first starts, tells them all of network changes.
        let networkChanges = NetworkChanges(
            source: NetlinkRouteSource(watches: EventLoop.main), timers: EventLoop.main, logger: logger)
        let network = NetworkPositioning.makeProviders(
            configuration, connection: connection, network: networkChanges, clock: clock, logger: logger,
            reportLookup: { service.recordLookup($0) })
        let modem = ModemPositioning.makeProviders(
            configuration, connection: connection, network: networkChanges, clock: clock, logger: logger,
            reportLookup: { service.recordLookup($0) })
        let providers = makeProviders(configuration, clock: clock, logger: logger) + network + modem.providers
        if providers.isEmpty { logger.warning("no location source is enabled; clients will get no location") }
        let compass =
            configuration.compass.enabled
            ? SensorProxyCompass(connection: connection, clock: clock, logger: logger) : nil
        let locator = Locator(
            providers: providers,
            compass: compass.map { ($0, HeadingCorrection(configuration: configuration.compass, logger: logger)) },
            clock: clock, timers: EventLoop.main, watches: EventLoop.main, logger: logger)
        compass?.watch()
        let backpressure = FixBackpressure(connection: connection, logger: logger) {
            service.deliver($0)
        }
        backpressure.onCaughtUp = { IdleMemory.requestRelease(.heap) }
        locator.onFix = { backpressure.offer($0) }
        locator.onAvailableLevelChanged = { service.setAvailableLevel($0, reason: locator.unavailabilityReason) }
        locator.onSky = { service.skyChanged($0) }
        service.onStaticLocationChanged = { locator.setStaticLocation($0) }
        service.onDemandChanged = { locator.setDemand($0) }
        service.onFreshFixWanted = { locator.refresh() }
        service.onExactTimeThresholdChanged = { modem.client?.setGPSRefreshRate($0 ?? 0) }
        service.setAvailableLevel(locator.availableLevel)
        service.providerStatus = { locator.status }
        service.simulator = ReplaySimulator(locator: locator, clock: clock)
        service.onClientCountChanged = { count in
            armIdleExit(options.idleTimeout, clients: count, keepsRegions: service.keepsRegions, logger: logger)
            armMemoryRelease(clients: count, connection: connection)
        }
        // Peers leaving while no client is left map code back in; the release waits for them to stop, as it waits
        // for the count to hold still.
        service.onClientlessPeerLeft = {
            if service.clientCount == 0 { armMemoryRelease(clients: 0, connection: connection) }
        }
        service.onKeepsRegionsChanged = { keeps in
            armIdleExit(options.idleTimeout, clients: service.clientCount, keepsRegions: keeps, logger: logger)
        }
        BusActor.task {
            do {
                try await service.start()
                logger.notice("whereaboutsd \(version) serving org.freedesktop.GeoClue2 as \(connection.uniqueName)")
                armIdleExit(
                    options.idleTimeout, clients: service.clientCount, keepsRegions: service.keepsRegions,
                    logger: logger)
                armMemoryRelease(clients: service.clientCount, connection: connection)
            } catch {
                logger.error("cannot serve org.freedesktop.GeoClue2: \(error)")
                Shutdown.exit(1)
            }
        }
    }

    /// The configuration file's settings: only a regular file of at most 1 MiB is read (a symbolic link is
    /// followed to one; ``RegularFile``); a missing default file means the built-in defaults.
    private static func loadConfiguration(_ options: Options, logger: any Logger) throws -> Configuration {
        let path = options.configPath
        guard let bytes = try RegularFile.read(path, limit: 1 << 20, followLinks: true) else {
            guard !options.configPathGiven else { throw RegularFile.Refusal(path: path, reason: .system(ENOENT)) }
            logger.info("no \(path); using the built-in defaults")
            return .default
        }
        let configuration = try Configuration.parse(bytes, file: path)
        for duplicate in configuration.duplicateKeys { logger.warning("\(duplicate)") }
        return configuration
    }

    private static func makeProviders(_ configuration: Configuration, clock: SystemClock, logger: any Logger)
        -> [any LocationProvider]
    {
        var providers: [any LocationProvider] = []
        if configuration.staticSource.enabled {
            providers.append(
                StaticProvider(
                    path: configuration.staticSource.path, clock: clock, timers: EventLoop.main,
                    watches: EventLoop.main,
                    logger: logger))
        }
        if configuration.replay.enabled, let path = configuration.replay.path {
            providers.append(
                ReplayProvider(
                    path: path, speed: configuration.replay.speed, clock: clock, timers: EventLoop.main, logger: logger)
            )
        }
        if configuration.gpsd.enabled {
            providers.append(
                GPSDProvider(
                    host: configuration.gpsd.host, port: configuration.gpsd.port, client: LibGPSClient(), clock: clock,
                    timers: EventLoop.main, watches: EventLoop.main, logger: logger))
        }
        if configuration.networkNMEA.enabled {
            let nmea = configuration.networkNMEA
            var endpoints: [NMEAEndpoint] = []
            if let path = nmea.socketPath { endpoints.append(.unixSocket(path: path)) }
            if let path = nmea.devicePath { endpoints.append(.device(path: path, baud: nmea.baudRate)) }
            if let host = nmea.tcpHost, let port = nmea.tcpPort { endpoints.append(.tcp(host: host, port: port)) }
            if endpoints.isEmpty {
                logger.warning("[network-nmea] is enabled with no nmea-socket=, device= or tcp-host=; nothing to read")
            }
            for endpoint in endpoints {
                providers.append(
                    NMEAStreamProvider(
                        endpoint: endpoint, clock: clock, timers: EventLoop.main, watches: EventLoop.main,
                        logger: logger))
            }
        }
        return providers
    }

    /// Exits after `timeout` seconds without clients, as GeoClue's `--timeout` does, unless an app's region or
    /// pending event is kept: regions are watched whenever they exist.
    private static func armIdleExit(_ timeout: UInt32, clients: Int, keepsRegions: Bool, logger: any Logger) {
        if let idleTimer { EventLoop.main.cancel(idleTimer) }
        idleTimer = nil
        guard timeout > 0, clients == 0, !keepsRegions else { return }
        idleTimer = EventLoop.main.schedule(after: .seconds(Int(timeout))) {
            logger.notice("not used for \(timeout) seconds; exiting")
            Shutdown.exit(0)
        }
    }

    /// Hands memory back (``IdleMemory``) once the number of clients has held still for ``memoryReleaseDelay``:
    /// the heap's free pages when the clients fell to at most half of their peak since the last release and by at
    /// least ``heapReleaseDrop`` (a burst of them, or one user's attack, is gone), and the code pages too when none
    /// is left (after the start and whenever the last client leaves). A change meanwhile decides afresh; while the
    /// bus is behind (more than `Connection.backlogLimit` waits for it), the release waits too, as that is memory in
    /// use.
    private static func armMemoryRelease(clients: Int, connection: Connection) {
        clientPeak = max(clientPeak, clients)
        if let memoryReleaseTimer { EventLoop.main.cancel(memoryReleaseTimer) }
        memoryReleaseTimer = nil
        let scope: IdleMemory.Scope
        if clients == 0 {
            scope = .heapAndCode
        } else if clientPeak - clients >= heapReleaseDrop, clients <= clientPeak / 2 {
            scope = .heap
        } else {
            return
        }
        memoryReleaseTimer = EventLoop.main.schedule(after: memoryReleaseDelay) {
            memoryReleaseTimer = nil
            guard connection.outgoingBytes <= Connection.backlogLimit else {
                armMemoryRelease(clients: clients, connection: connection)
                return
            }
            clientPeak = clients
            IdleMemory.requestRelease(scope)
        }
    }
}
