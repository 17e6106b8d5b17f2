import Loop
import LoopScheduling
import WhereaboutsCore

/// Wi-Fi positioning (`[wifi]`): the access points around the machine, located by the position cache, by places
/// learned on the machine, or by an Ichnaea-compatible web service (beaconDB by default).
///
/// **When it runs.** For clients served at neighbourhood level and above (IP positioning's city-level answer
/// cannot serve them). It scans every ``streetScanInterval`` while a client needs street level or better, every
/// ``coarseScanInterval`` otherwise, and not at all while stopped.
///
/// **What leaves the machine.** Only what ``AccessPointSelection`` keeps (no hidden, `_nomap` or `_optout`
/// networks, no networks that travel with their users), only with at least two of them, only each access point's
/// address and signal, with `considerIp` and every fallback off, so that a guess from the IP address is never
/// taken for a Wi-Fi fix; and only when neither the cache nor a learned place knows the scan and the scan differs
/// enough from the one last asked about (``QueryThrottle``). After a failure ``LookupBackoff`` spaces the tries.
///
/// **Offline.** Answers are kept in the ``PositionCache`` (saved beside the grants), and while a satellite fix
/// better than 50 m is at hand the access points seen there are remembered in it too, so known places are
/// located with no request at all, after a restart and with the network down.
///
/// **Disputed answers.** An answer the fusion rule finds contradicted by a better-placed source (a recent satellite
/// fix, the serving cells' answer: ``SourceAgreement``) is not served; this provider then forgets it (an answer
/// just received is not kept, a cached or learned one is removed), does not offer it again, and does not ask about
/// the same access points again until the scan changes as much as a new lookup needs (``QueryThrottle``).
///
/// **Availability.** Street level while a wireless interface exists and the service can be used, or while the
/// current scan is known to the cache; otherwise none, with the reason (`no-wifi`, `service-unreachable`,
/// `service-error`, `service-refused`) in `AvailabilityChanged`. It comes back by itself with the next answer,
/// which is asked for at once when ``NetworkChanges`` says the machine joined a network, a transient backoff
/// ended.
@BusActor
public final class WiFiProvider: LocationProvider, SatelliteFixLearner, CellCarryingLookup {
    /// The scan interval while a client needs street level or better (GeoClue's 10 s).
    public static let streetScanInterval: Duration = .seconds(10)
    /// The scan interval while clients need less.
    public static let coarseScanInterval: Duration = .seconds(300)
    /// How often an unchanged position is offered again, so that it stays current for the fusion rule (which
    /// lets a coarser provider replace a fix older than a minute).
    public static let refreshInterval: Duration = .seconds(50)
    /// How far apart in time a scan and a satellite fix may be and still be taken as one place.
    public static let pairingWindow: Duration = .seconds(2)
    /// How long learned places wait to be saved, so that a walk writes the file once a while, not every scan.
    public static let learnedSaveDelay: Duration = .seconds(30)
    /// How long one lookup may take.
    public static let lookupTimeout: Duration = .seconds(20)

    public let kind = ProviderKind.wifi
    public let minimumClientLevel = AccuracyLevel.neighborhood
    public var onFix: (@BusActor (Fix) -> Void)?
    public var onAvailabilityChanged: (@BusActor () -> Void)?

    /// The queries it shares with the cell provider (`[3g]` on): each lookup sends the cells they say to carry
    /// (``CellProvider/cellsToCarry``, the cells with no answer yet), as GeoClue's Wi-Fi queries carry them; none:
    /// access points alone. An answer to such a query at least as coarse as ``IchnaeaOutcome/smallestCellAccuracy``
    /// placed the cells, not the access points: it is not a Wi-Fi fix, and is neither delivered nor cached here; the
    /// queries hand every answer of a lookup that carried cells to the cell provider, and tell it when a lookup
    /// ``carryCells(_:)`` promised for the first scan will not be sent.
    public var combinedQueries: CombinedCellQueries?

    private let scanner: any AccessPointScanner
    private let transport: any HTTPTransport
    private let url: String
    private let clock: any WhereaboutsCore.Clock
    private let timers: any TimerScheduler
    private let logger: any Logger
    private var cache: PersistedCache<PositionCache>
    private let submitter: Geosubmitter?
    private let network: NetworkChanges?

    private var started = false
    private var demand = AccuracyLevel.neighborhood
    private let selection: AccessPointSelection
    private var throttle = QueryThrottle()
    private var backoff = LookupBackoff()
    private var record = LookupRecord()
    private var health: ServiceHealth
    private var lookupInFlight = false
    /// The cells the lookup in flight carries.
    private var cellsInFlight: [ServingCell] = []
    /// Whether a scan came since the last start.
    private var scannedSinceStart = false
    /// Whether ``carryCells(_:)`` promised that the first scan's lookup carries the cells.
    private var cellsPromised = false
    private var currentScanKnown = false
    /// How many access points of the last scan were left out as travelling with their users.
    private var movingLeftOut = 0
    /// The last scan would have been looked up but for the networks travelling with their users.
    private var onlyMovingNetworks = false
    /// The answers the fusion rule disputed: `disputed-answers` in `Providers`.
    private var disputes: UInt32 = 0
    /// The scan whose answer the fusion rule disputed while it was being delivered, so that it is not kept.
    private var disputedScan: [AccessPoint]?
    private var pendingSave: ScheduledTimer?
    private var lastScan: (usable: [AccessPoint], at: MonotonicTime)?
    private var lastSatelliteFix: (fix: Fix, at: MonotonicTime)?
    /// The fix last offered, when, and the scan it places.
    private var lastDelivered: (fix: Fix, at: MonotonicTime, scan: [AccessPoint])?

    /// A provider scanning with `scanner` and asking the geolocate `url` through `transport` about the access points
    /// `selection` keeps; `loadCache` reads what was saved before (at the first start), and `saveCache` keeps it
    /// durably; `network`, when given, says when the machine joins a network.
    public init(
        scanner: any AccessPointScanner, transport: any HTTPTransport, url: String,
        selection: AccessPointSelection = AccessPointSelection(),
        loadCache: @escaping @BusActor () -> PositionCache,
        saveCache: @escaping @BusActor (PositionCache) -> Void, submitter: Geosubmitter?, network: NetworkChanges?,
        clock: any WhereaboutsCore.Clock, timers: any TimerScheduler, logger: any Logger
    ) {
        self.scanner = scanner
        self.transport = transport
        self.url = url
        self.selection = selection
        health = ServiceHealth(
            label: "Wi-Fi", url: url, whileFailing: "; known places are still located from the cache")
        cache = PersistedCache(empty: PositionCache(), load: loadCache, keep: saveCache)
        self.submitter = submitter
        self.network = network
        self.clock = clock
        self.timers = timers
        self.logger = logger
        scanner.onScan = { [weak self] in self?.scanned($0) }
        scanner.onAvailabilityChanged = { [weak self] in
            guard let self else { return }
            self.logger.info(
                "Wi-Fi: scans through \(self.scanner.backend)\(self.scanner.isAvailable ? "" : ", no wireless interface")"
            )
            self.onAvailabilityChanged?()
        }
        network?.observe { [weak self] isOnline in self?.networkChanged(isOnline: isOnline) }
    }

    public var availableLevel: AccuracyLevel {
        guard scanner.isAvailable, !onlyMovingNetworks, health.problem == nil || currentScanKnown else { return .none }
        return .street
    }

    public var unavailabilityReason: String? {
        guard availableLevel == .none else { return nil }
        guard scanner.isAvailable else { return "no-wifi" }
        return onlyMovingNetworks ? "moving-network" : health.problem?.rawValue
    }

    public var details: [String: ProviderDetail] {
        var details = record.details
        details["backend"] = .text(scanner.backend)
        if let reason = unavailabilityReason { details["reason"] = .text(reason) }
        if let submitter { details["submissions"] = .count(submitter.submissions) }
        if selection.movingNetworks != nil { details["moving-networks-left-out"] = .count(UInt32(movingLeftOut)) }
        details["disputed-answers"] = .count(disputes)
        if cache.isLoaded {
            details["learned-places"] = .count(UInt32(cache.contents.count(of: .learned)))
            details["cached-answers"] = .count(UInt32(cache.contents.count(of: .network)))
        }
        return details
    }

    public func start() {
        cache.loadOnce()
        started = true
        scannedSinceStart = false
        network?.follow()
        // A fresh start compares its first scan with nothing: a place that was known when it last ran, and whose
        // cache entry has aged out since, is asked again.
        throttle.reset()
        scanner.start(interval: scanInterval)
    }

    public func stop() {
        let availableBefore = availableLevel
        started = false
        scanner.stop()
        declinePromisedCells()
        lastDelivered = nil
        currentScanKnown = false
        if pendingSave != nil { saveNow() }
        if availableLevel != availableBefore { onAvailabilityChanged?() }
    }

    public func demandChanged(_ level: AccuracyLevel) {
        guard level != demand else { return }
        demand = level
        if started { scanner.start(interval: scanInterval) }
    }

    /// Offers the current position again, with a fresh timestamp, while the last scan is recent (within two
    /// street-level intervals) and was located: a single-shot request is then answered at once.
    public func refresh() {
        guard started, currentScanKnown, let last = lastDelivered, let scan = lastScan,
            clock.monotonicNow - scan.at <= Self.streetScanInterval * 2
        else { return }
        lastDelivered = nil
        deliver(
            latitude: last.fix.latitude, longitude: last.fix.longitude, accuracy: last.fix.horizontalAccuracy,
            description: last.fix.description, for: last.scan)
    }

    /// Forgets an answer the fusion rule disputed (``SourceAgreement``): the fix last offered, or the one being
    /// offered now.
    public func answerDisputed(_ disagreement: Disagreement) {
        guard let last = lastDelivered, last.fix == disagreement.disputed else { return }
        let availableBefore = availableLevel
        lastDelivered = nil
        disputedScan = last.scan
        disputes &+= 1
        if lastScan?.usable == last.scan { currentScanKnown = false }
        if cache.contents.forget(last.scan, latitude: last.fix.latitude, longitude: last.fix.longitude) { saveNow() }
        let reference = disagreement.reference
        record.ended(
            at: clock.wallNow, "disputed",
            message: "\(Int(disagreement.distance.rounded())) m from \(reference.provider.rawValue)'s position, "
                + "±\(Int(reference.horizontalAccuracy.rounded())) m; not served, not kept")
        if availableLevel != availableBefore { onAvailabilityChanged?() }
    }

    private var scanInterval: Duration { demand >= .street ? Self.streetScanInterval : Self.coarseScanInterval }

    /// Takes a satellite fix that clients were given: a precise one seen together with a scan teaches the cache
    /// that place and, with `submit-data=true`, is contributed.
    public func observeSatelliteFix(_ fix: Fix) {
        guard fix.provider.isSatellite, !fix.isSimulated else { return }
        let now = clock.monotonicNow
        lastSatelliteFix = (fix, now)
        if let scan = lastScan, now - scan.at <= Self.pairingWindow {
            pair(fix, with: scan.usable, scanAge: now - scan.at)
        }
    }

    /// Takes `fix` and the scan made `scanAge` before it was received (negative: after) as one place. The scan's
    /// time is given on the fix's clock, so that a receiver whose clock is off still pairs.
    private func pair(_ fix: Fix, with usable: [AccessPoint], scanAge: Duration) {
        if cache.contents.learn(
            latitude: fix.latitude, longitude: fix.longitude, accuracy: fix.horizontalAccuracy, scan: usable,
            now: clock.wallNow)
        {
            scheduleLearnedSave()
        }
        submitter?.offer(fix, usable: usable, scannedAt: fix.timestamp.advanced(by: .zero - scanAge))
    }

    private func scanned(_ seen: [AccessPoint]) {
        guard started else { return }
        scannedSinceStart = true
        defer { settlePromisedCells() }
        let now = clock.monotonicNow
        let usable = selection.usable(seen)
        lastScan = (usable, now)
        if let satellite = lastSatelliteFix, now - satellite.at <= Self.pairingWindow {
            pair(satellite.fix, with: usable, scanAge: satellite.at - now)
        }
        let knewScan = currentScanKnown
        let wasOnlyMoving = onlyMovingNetworks
        defer {
            if currentScanKnown != knewScan || onlyMovingNetworks != wasOnlyMoving { onAvailabilityChanged?() }
        }
        movingLeftOut = selection.movingCount(seen)
        onlyMovingNetworks =
            usable.count < AccessPointSelection.minimumForQuery
            && usable.count + movingLeftOut >= AccessPointSelection.minimumForQuery
        guard usable.count >= AccessPointSelection.minimumForQuery else {
            currentScanKnown = false
            if onlyMovingNetworks {
                record.ended(
                    at: clock.wallNow, "moving-network",
                    message: "\(movingLeftOut) of \(seen.count) seen travel with their users; nothing sent")
            } else {
                record.ended(
                    at: clock.wallNow, "too-few-access-points",
                    message: "\(usable.count) usable of \(seen.count) seen; nothing sent")
            }
            return
        }
        if let known = cache.contents.lookup(usable, now: clock.wallNow) {
            currentScanKnown = true
            let source = known.origin == .learned ? "learned" : "cache"
            record.ended(at: clock.wallNow, "position", source: source)
            throttle.looked(
                up: usable,
                outcome: .position(latitude: known.latitude, longitude: known.longitude, accuracy: known.accuracy),
                now: now)
            deliver(
                latitude: known.latitude, longitude: known.longitude, accuracy: known.accuracy, source: source,
                for: usable)
            return
        }
        currentScanKnown = false
        // The cache knew the previous scan and not this one (its entry aged out, or the scans differ only below
        // the cache's anchors): the throttle's reference is that cache answer, so it must not hold the lookup back.
        if knewScan { throttle.reset() }
        lookUpIfDue(usable, now: now)
    }

    private func lookUpIfDue(_ usable: [AccessPoint], now: MonotonicTime) {
        guard !lookupInFlight, backoff.allowsAttempt(now: now), throttle.needsLookup(usable, now: now) else { return }
        lookUp(usable)
    }

    /// Ends a transient backoff and, while running and online, asks at once about the current scan if it is still
    /// unlocated and recent (within two street-level intervals); otherwise the next scan asks.
    private func networkChanged(isOnline: Bool) {
        backoff.networkChanged()
        let now = clock.monotonicNow
        guard started, isOnline, !currentScanKnown, let scan = lastScan,
            scan.usable.count >= AccessPointSelection.minimumForQuery, now - scan.at <= Self.streetScanInterval * 2
        else { return }
        lookUpIfDue(scan.usable, now: now)
    }

    /// Sends `cells` (the cell provider's, with no answer yet) in one query with the access points of the latest
    /// scan, when that scan is recent (within two scan intervals), has enough usable access points, is not known to
    /// the cache (then the cells alone are unknown, and go alone) and the backoff allows; true when such a query
    /// was sent, or one carrying exactly these cells is in flight, or when no scan came since the start: the first
    /// scan's lookup carries the cells ``combinedQueries`` name, and if it needs none they are told so. That promise
    /// is made once a start: asked again before the first scan, it says no. The answer goes to ``combinedQueries``.
    public func carryCells(_ cells: [ServingCell]) -> Bool {
        if lookupInFlight { return cellsInFlight == cells }
        guard started, scanner.isAvailable else { return false }
        guard scannedSinceStart else {
            guard !cellsPromised else { return false }
            cellsPromised = true
            return true
        }
        let now = clock.monotonicNow
        guard !currentScanKnown, let scan = lastScan,
            scan.usable.count >= AccessPointSelection.minimumForQuery, now - scan.at <= scanInterval * 2,
            backoff.allowsAttempt(now: now)
        else { return false }
        lookUp(scan.usable, cells: cells)
        return true
    }

    private func lookUp(_ usable: [AccessPoint]) { lookUp(usable, cells: combinedQueries?.cellsToCarry ?? []) }

    /// After the first scan: the promise of ``carryCells(_:)`` is kept when its lookup carries cells, and declined
    /// otherwise.
    private func settlePromisedCells() {
        if lookupInFlight, !cellsInFlight.isEmpty { cellsPromised = false }
        declinePromisedCells()
    }

    private func declinePromisedCells() {
        guard cellsPromised else { return }
        cellsPromised = false
        combinedQueries?.declined()
    }

    private func lookUp(_ usable: [AccessPoint], cells: [ServingCell]) {
        lookupInFlight = true
        cellsInFlight = cells
        record.sent()
        let body =
            cells.isEmpty ? IchnaeaQuery.wifi(usable) : IchnaeaQuery.geolocate(accessPoints: usable, cells: cells)
        let request = HTTPRequest(url: url, body: body, timeout: Self.lookupTimeout)
        let transport = self.transport
        BusActor.task { [weak self] in
            let result = await transport.post(request)
            guard let self else { return }
            self.answered(result, for: usable, withCells: !cells.isEmpty)
            if !cells.isEmpty { self.combinedQueries?.answered(result, carrying: cells) }
        }
    }

    private func answered(
        _ result: Result<HTTPResponse, HTTPFailure>, for usable: [AccessPoint], withCells: Bool
    ) {
        lookupInFlight = false
        let now = clock.monotonicNow
        let availableBefore = availableLevel
        defer { if availableLevel != availableBefore { onAvailabilityChanged?() } }
        let outcome: IchnaeaOutcome
        switch result {
        case .failure(let failure):
            record.ended(at: clock.wallNow, "failed", message: failure.description)
            health.note(
                .unreachable, failure.description, retryAt: backoff.record(failure, now: now).retryAt, now: now,
                logger: logger)
            return
        case .success(let response):
            outcome = Self.accessPointsOutcome(IchnaeaOutcome.interpret(response, kind: withCells ? .cells : .wifi))
        }
        let summary = outcome.summary
        if withCells, case .refused = outcome {
            // The service refused the cells (Mozilla's Ichnaea refuses a whole query naming an `nr` cell): the
            // access points are asked again alone at once, and the cell provider, told of the refusal, carries its
            // cells no more.
            record.ended(at: clock.wallNow, summary.outcome, source: "network", message: summary.message)
            logger.info("Wi-Fi: the service refused a query with cells (\(summary.message ?? "")); asking without them")
            if started { lookUp(usable, cells: []) }
            return
        }
        throttle.looked(up: usable, outcome: outcome, now: now)
        let step = backoff.record(outcome, now: now)
        health.note(outcome.problem, summary.message ?? "", retryAt: step?.retryAt, now: now, logger: logger)
        switch outcome {
        case .position(let latitude, let longitude, let accuracy):
            record.ended(at: clock.wallNow, summary.outcome, source: "network")
            disputedScan = nil
            // Delivered only for the scan still current: an answer for a place left meanwhile is kept, not shown.
            if started, lastScan?.usable == usable {
                currentScanKnown = true
                deliver(latitude: latitude, longitude: longitude, accuracy: accuracy, source: "network", for: usable)
            }
            // Kept unless the fusion rule disputed it as it was delivered.
            if disputedScan == usable {
                disputedScan = nil
            } else {
                cache.contents.store(
                    latitude: latitude, longitude: longitude, accuracy: accuracy, for: usable, now: clock.wallNow)
                saveNow()
            }
        case .notFound:
            record.ended(at: clock.wallNow, summary.outcome, source: "network")
            logger.info("Wi-Fi: the service knows none of these \(usable.count) access points; no fix here")
        case .refused, .serverTrouble, .malformed:
            record.ended(at: clock.wallNow, summary.outcome, source: "network", message: summary.message)
        }
    }

    /// What an answer says of the access points: a position as coarse as a cell's placed the cells sent with them
    /// (``CombinedCellQueries/cellsToCarry``), and says no more of the access points than that the service does not
    /// know them.
    private static func accessPointsOutcome(_ outcome: IchnaeaOutcome) -> IchnaeaOutcome {
        if case .position(_, _, let accuracy) = outcome, accuracy >= IchnaeaOutcome.smallestCellAccuracy {
            return .notFound
        }
        return outcome
    }

    private func deliver(
        latitude: Double, longitude: Double, accuracy: Double, source: String, for scan: [AccessPoint]
    ) {
        let description =
            switch source {
            case "learned": "WiFi (a place learned on this machine)"
            case "cache": "WiFi (cached)"
            default: "WiFi"
            }
        deliver(latitude: latitude, longitude: longitude, accuracy: accuracy, description: description, for: scan)
    }

    private func deliver(
        latitude: Double, longitude: Double, accuracy: Double, description: String, for scan: [AccessPoint]
    ) {
        guard started else { return }
        let now = clock.monotonicNow
        let fix = Fix(
            latitude: latitude, longitude: longitude, horizontalAccuracy: accuracy, timestamp: clock.wallNow,
            provider: .wifi, description: description)
        if let last = lastDelivered, now - last.at < Self.refreshInterval,
            last.fix.latitude == latitude, last.fix.longitude == longitude,
            last.fix.horizontalAccuracy == accuracy
        {
            return
        }
        lastDelivered = (fix, now, scan)
        onFix?(fix)
    }

    private func saveNow() {
        if let pendingSave { timers.cancelTimer(pendingSave) }
        pendingSave = nil
        cache.save()
    }

    private func scheduleLearnedSave() {
        guard pendingSave == nil else { return }
        pendingSave = timers.scheduleOnBus(after: Self.learnedSaveDelay) { [weak self] in
            guard let self else { return }
            self.pendingSave = nil
            self.cache.save()
        }
    }
}
