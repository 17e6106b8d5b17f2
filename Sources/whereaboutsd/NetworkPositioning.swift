import DBus
import HTTP
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsProviders
import WhereaboutsStorage
import WiFi

/// The network providers of `[network]`, `[wifi]` and `[ip]`, asking through libcurl, loaded at the first request,
/// so that a daemon whose clients never need the network never loads it.
@BusActor
enum NetworkPositioning {
    /// The Wi-Fi and IP providers the configuration enables; each request they send is told to `reportLookup`.
    static func makeProviders(
        _ configuration: Configuration, connection: Connection, network networkChanges: NetworkChanges,
        clock: SystemClock, logger: any Logger, reportLookup: @escaping @BusActor @Sendable (NetworkLookup) -> Void
    ) -> [any LocationProvider] {
        let network = configuration.network
        if case .unsupported(let method) = network.ip.method, network.ip.enabled, network.enabled {
            logger.notice("[ip] method=\(method) is not supported (only ichnaea is); IP positioning is off")
        }
        guard network.wifiEnabled || network.ipEnabled else {
            if !network.enabled { logger.info("[network] enable=false: nothing is sent to any positioning service") }
            return []
        }
        // One transport (one thread, made at its first request) each for Wi-Fi, IP and contributing, so that a
        // hung request of one never holds another's in its queue.
        let agent = userAgent()
        let transport = ReportingTransport(
            CurlTransport(userAgent: agent, caFile: network.caFile), kind: .wifi, clock: clock, report: reportLookup)
        var providers: [any LocationProvider] = []
        if network.wifiEnabled {
            let cacheFile = PositionCacheFile(besideGrantsAt: configuration.authorisation.grantsPath) { failure in
                logger.error("position cache: cannot save: \(failure)")
            }
            Shutdown.flushBeforeExit { cacheFile.flush() }
            let submitter =
                network.submitsData
                ? Geosubmitter(
                    url: network.wifi.submissionURL, nickname: network.wifi.submissionNick,
                    transport: ReportingTransport(
                        CurlTransport(userAgent: agent, caFile: network.caFile), kind: .submission, clock: clock,
                        report: reportLookup),
                    clock: clock, logger: logger) : nil
            let provider = WiFiProvider(
                scanner: WiFiScanner(connection: connection, clock: clock, timers: EventLoop.main, logger: logger),
                transport: transport,
                url: network.wifi.url, selection: network.wifi.selection,
                loadCache: { cacheFile.load(now: clock.wallNow) { logger.warning($0) } },
                saveCache: { cacheFile.save($0) },
                submitter: submitter, network: networkChanges, clock: clock, timers: EventLoop.main, logger: logger)
            logger.info(
                "Wi-Fi positioning: unknown places are looked up at \(loggableURL(network.wifi.url))"
                    + (submitter == nil
                        ? "" : "; satellite fixes are contributed to \(loggableURL(network.wifi.submissionURL))"))
            providers.append(provider)
        }
        if network.ipEnabled {
            providers.append(
                IPProvider(
                    transport: ReportingTransport(
                        CurlTransport(userAgent: agent, caFile: network.caFile), kind: .ip, clock: clock,
                        report: reportLookup),
                    url: network.ipLocateURL,
                    accuracy: network.ip.accuracy, network: networkChanges,
                    asksThroughTunnels: network.ip.asksThroughTunnels, clock: clock, timers: EventLoop.main,
                    logger: logger))
            logger.info("IP positioning: city-level lookups at \(loggableURL(network.ipLocateURL))")
        }
        return providers
    }

    /// `whereaboutsd/VERSION (OS VERSION)`, so the service can tell who asks (beaconDB uses no keys and asks
    /// clients to identify themselves).
    static func userAgent() -> String {
        var name = "Linux"
        var osVersion = ""
        if let text = try? readTextFile("/etc/os-release", limit: 64 << 10) {
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let value = parts[1].filter { $0 != "\"" && $0 != "'" }
                if parts[0] == "NAME" { name = String(value) }
                if parts[0] == "VERSION_ID" { osVersion = String(value) }
            }
        }
        let system = osVersion.isEmpty ? name : "\(name) \(osVersion)"
        return "whereaboutsd/\(version) (\(system.filter { $0.isASCII && $0 != "(" && $0 != ")" }))"
    }
}
