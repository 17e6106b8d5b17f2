import Loop
import WhereaboutsCore

/// The predicted-orbit files (XTRA) for the modems' receivers: kept in the state folder while valid, downloaded
/// when none is, with an anonymous GET over HTTPS.
///
/// **What is sent.** A GET of each server's URL in turn (the `[modem-gps] assistance-servers=` given, else those
/// the modem lists, an `http://` one asked over `https://`) with only a User-Agent naming the service: no IMSI,
/// IMEI, serial, cell or position. The server sees the machine's IP address and that it wants orbit data.
///
/// **When.** Only when a modem's receiver is about to be set up for an exact client and no valid file is kept,
/// as ``PredictedOrbitDownloadRule`` allows (network positioning on, not over a metered connection unless allowed,
/// not within an hour of a download that failed). Two modems asking for the same servers share one download.
///
/// **Bounds.** Each request takes at most ``requestTimeout``, and asking NetworkManager and the servers together
/// ``downloadTimeout``; an
/// answer other than 200 with a body, a body cut off or over ``PredictedOrbitFile/maximumSize`` fails that server
/// with one log line and the next is asked. A failure costs the fix nothing: the receiver starts unassisted.
@BusActor
public final class PredictedOrbitSource: GNSSAssistance {
    /// The longest one server is waited for.
    public static let requestTimeout = Duration.seconds(10)
    /// The longest NetworkManager and the servers together are waited for, so that a receiver waits no longer for
    /// its orbits.
    public static let downloadTimeout = Duration.seconds(20)

    public let suplServer: String?
    /// `[modem-gps] assistance=`: false leaves only the SUPL server to set.
    private let injectsOrbits: Bool
    private let configuredServers: [String]?
    private let downloader: any HTTPDownloader
    private let isMetered: @BusActor () async -> Bool
    private let clock: any WhereaboutsCore.Clock
    private let logger: any Logger
    private var rule: PredictedOrbitDownloadRule
    private var cache: PersistedCache<PredictedOrbitCache>
    private var downloads: [[String]: Task<PredictedOrbitFile?, Never>] = [:]
    private var loggedOnce: Set<String> = []

    /// A source following `configuration` and `[network] enable=` (`networkPositioningEnabled`), downloading
    /// through `downloader`; `isMetered` says whether NetworkManager calls the connection metered; `loadCache`
    /// reads the kept files (at the first need), `saveCache` keeps them.
    public init(
        configuration: GNSSAssistanceConfig, networkPositioningEnabled: Bool, downloader: any HTTPDownloader,
        isMetered: @escaping @BusActor () async -> Bool, loadCache: @escaping @BusActor () -> PredictedOrbitCache,
        saveCache: @escaping @BusActor (PredictedOrbitCache) -> Void, clock: any WhereaboutsCore.Clock,
        logger: any Logger
    ) {
        suplServer = configuration.suplServer
        injectsOrbits = configuration.enabled
        configuredServers = configuration.servers
        self.downloader = downloader
        self.isMetered = isMetered
        self.clock = clock
        self.logger = logger
        rule = PredictedOrbitDownloadRule(
            networkPositioningEnabled: networkPositioningEnabled,
            overMeteredConnection: configuration.overMeteredConnection)
        cache = PersistedCache(
            empty: PredictedOrbitCache(capacity: PredictedOrbitCache.defaultCapacity), load: loadCache,
            keep: saveCache)
    }

    public func predictedOrbits(modemServers: [String]) async -> PredictedOrbitFile? {
        guard injectsOrbits else { return nil }
        let servers = configuredServers ?? modemServers.compactMap(Self.overHTTPS)
        guard !servers.isEmpty else {
            logOnce("no-servers", "predicted orbits: the modem lists no server; its receiver starts unassisted")
            return nil
        }
        cache.loadOnce()
        if let file = cache.contents.file(for: servers, at: clock.wallNow) { return file }
        if let download = downloads[servers] { return await download.value }
        if let refusal = rule.refusal(for: servers, at: clock.monotonicNow) {
            report(refusal)
            return nil
        }
        let deadline = clock.monotonicNow + Self.downloadTimeout
        let download = BusActor.task { [weak self] () -> PredictedOrbitFile? in
            guard let self else { return nil }
            if self.rule.asksWhetherMetered, let refusal = self.rule.refusal(metered: await self.isMetered()) {
                self.report(refusal)
                return nil
            }
            return await self.download(servers, before: deadline)
        }
        downloads[servers] = download
        let file = await download.value
        downloads[servers] = nil
        return file
    }

    /// Asks each of `servers` in turn until one gives a file, before `deadline`.
    private func download(_ servers: [String], before deadline: MonotonicTime) async -> PredictedOrbitFile? {
        for url in servers {
            let left = deadline - clock.monotonicNow
            guard left > .zero else { break }
            let outcome = await downloader.get(
                url, timeout: min(Self.requestTimeout, left), maximumResponseBytes: PredictedOrbitFile.maximumSize)
            let why: String
            switch outcome {
            case .success(let response) where response.status == 200 && !response.body.isEmpty:
                let now = clock.wallNow
                let file = PredictedOrbitFile(
                    servers: servers, source: url, downloaded: now,
                    expires: PredictedOrbitValidity.expiry(downloaded: now, headers: response.headers),
                    data: response.body)
                cache.contents.store(file, now: now)
                cache.save()
                rule.succeeded(servers)
                logger.info(
                    "predicted orbits: \(file.data.count) bytes from \(loggableURL(url)), used for "
                        + "\(file.expires.since(now).components.seconds / 3600) h")
                return file
            case .success(let response):
                why = "answered \(response.status)\(response.body.isEmpty ? " with nothing" : "")"
            case .failure(let failure):
                why = failure.description
            }
            logger.warning("predicted orbits: \(loggableURL(url)) \(why)")
        }
        rule.failed(servers, at: clock.monotonicNow)
        logger.warning(
            "predicted orbits: no server gave a file; the receivers start unassisted, and the servers are asked "
                + "again in an hour at the earliest")
        return nil
    }

    private func report(_ refusal: PredictedOrbitDownloadRule.Refusal) {
        switch refusal {
        case .networkPositioningOff:
            logOnce(
                "network-off",
                "predicted orbits: [network] enable=false; nothing is downloaded, the receivers start unassisted")
        case .meteredConnection:
            logOnce(
                "metered",
                "predicted orbits: not downloaded over a metered connection ([modem-gps] assistance-metered=false)")
        case .recentFailure:
            return
        }
    }

    private func logOnce(_ key: String, _ line: String) {
        guard loggedOnce.insert(key).inserted else { return }
        logger.info(line)
    }

    /// `url` as asked: an `https://` URL as it is, an `http://` one over `https://`; nil for anything else.
    static func overHTTPS(_ url: String) -> String? {
        guard PredictedOrbitCache.isPlainURL(url) else { return nil }
        return url.hasPrefix("http://") ? "https://" + url.dropFirst(7) : url
    }
}
