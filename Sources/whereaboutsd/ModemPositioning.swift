import DBus
import HTTP
import Loop
import LoopScheduling
import Modem
import WhereaboutsCore
import WhereaboutsProviders
import WhereaboutsStorage
import WiFi

/// The modem providers of `[modem-gps]`, `[3g]` and `[cdma]`, sharing one ``ModemManagerClient`` on the system
/// bus connection.
@BusActor
enum ModemPositioning {
    /// The providers the configuration enables and the client they share (nil when none is enabled), which the
    /// daemon tells the exact clients' smallest `TimeThreshold`. Cell lookups ask `[wifi] url=` through a libcurl transport of their own, and only while
    /// `[network]` allows it; their answers are kept in the file `cells` beside the grants, and each request is
    /// told to `reportLookup`.
    static func makeProviders(
        _ configuration: Configuration, connection: Connection, network networkChanges: NetworkChanges,
        clock: SystemClock, logger: any Logger, reportLookup: @escaping @BusActor @Sendable (NetworkLookup) -> Void
    ) -> (providers: [any LocationProvider], client: ModemManagerClient?) {
        let modem = configuration.modem
        let network = configuration.network
        let looksUpCells = modem.cellEnabled && network.enabled
        if modem.cellEnabled, !network.enabled {
            logger.info("[3g] enable=true, but [network] enable=false: cells are not looked up")
        }
        guard modem.gnssEnabled || looksUpCells || modem.cdmaEnabled else { return ([], nil) }
        let client = ModemManagerClient(
            connection: connection,
            assistance: modem.gnssEnabled && (modem.assistance.enabled || modem.assistance.suplServer != nil)
                ? predictedOrbits(configuration, connection: connection, clock: clock, logger: logger) : nil,
            logger: logger)
        var providers: [any LocationProvider] = []
        if modem.gnssEnabled {
            providers.append(ModemGNSSProvider(modems: client, clock: clock, logger: logger))
            logger.info("modem GNSS: the modems' satellite receivers, through ModemManager")
        }
        if looksUpCells {
            let cacheFile = CellAnswerCacheFile(besideGrantsAt: configuration.authorisation.grantsPath) { failure in
                logger.error("cell answers: cannot save: \(failure)")
            }
            Shutdown.flushBeforeExit { cacheFile.flush() }
            providers.append(
                CellProvider(
                    modems: client,
                    transport: ReportingTransport(
                        CurlTransport(userAgent: NetworkPositioning.userAgent(), caFile: network.caFile), kind: .cell,
                        clock: clock, report: reportLookup),
                    url: network.wifi.url, loadCache: { cacheFile.load(now: clock.wallNow) { logger.warning($0) } },
                    saveCache: { cacheFile.save($0) }, network: networkChanges, clock: clock, timers: EventLoop.main,
                    logger: logger))
            logger.info("cells: the modems' serving cells are looked up at \(loggableURL(network.wifi.url))")
        }
        if modem.cdmaEnabled {
            providers.append(CDMAProvider(modems: client, clock: clock, logger: logger))
            logger.info("CDMA: the modems' base station positions")
        }
        BusActor.task { await client.start() }
        return (providers, client)
    }

    /// The receivers' assistance: predicted orbits downloaded through a libcurl transport of their own and kept in
    /// the file `predicted-orbits` beside the grants, NetworkManager asked whether the connection is metered.
    private static func predictedOrbits(
        _ configuration: Configuration, connection: Connection, clock: SystemClock, logger: any Logger
    ) -> PredictedOrbitSource {
        let cacheFile = PredictedOrbitCacheFile(besideGrantsAt: configuration.authorisation.grantsPath) { failure in
            logger.error("predicted orbits: cannot save: \(failure)")
        }
        Shutdown.flushBeforeExit { cacheFile.flush() }
        let metering = NetworkManagerMetering(connection: connection)
        let assistance = configuration.modem.assistance
        if assistance.enabled, let servers = assistance.servers {
            logger.info("modem GNSS: predicted orbits from \(servers.map(loggableURL).joined(separator: " "))")
        }
        if let supl = assistance.suplServer { logger.info("modem GNSS: SUPL server \(supl) is set on the modems") }
        return PredictedOrbitSource(
            configuration: assistance, networkPositioningEnabled: configuration.network.enabled,
            downloader: CurlTransport(userAgent: NetworkPositioning.userAgent(), caFile: configuration.network.caFile),
            isMetered: { await metering.isMetered() },
            loadCache: { cacheFile.load(now: clock.wallNow) { logger.warning($0) } },
            saveCache: { cacheFile.save($0) }, clock: clock, logger: logger)
    }
}
