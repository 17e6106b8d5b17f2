import Loop
import LoopScheduling
import WhereaboutsCore

/// Cell positioning (`[3g]`): the cell each modem is registered on (ModemManager's 3GPP location with the modem's
/// access technologies, ``ServingCell``), looked up at the Ichnaea-compatible service Wi-Fi positioning asks, at
/// neighbourhood level.
///
/// **What leaves the machine.** Only each serving cell's radio, country, network and area codes and cell id
/// (``IchnaeaQuery/geolocate(accessPoints:cells:)``), only for cells with no answer yet, and only while a client
/// at neighbourhood level or above runs. A cell that is not a place (a test network, an "unknown" placeholder,
/// CDMA) is never sent; the first such report of each modem is logged. The IP fallback is off, so an answer is
/// never a position of the machine's address; Ichnaea's cell-area fallback (`lacf`) is allowed.
///
/// **One query with Wi-Fi.** Where `[wifi]` is on too, the cells are sent with the access points of Wi-Fi's
/// lookup (``cellsToCarry``, ``combinedQueries``), and a query of the cells alone is sent only when no Wi-Fi lookup
/// can carry them: Wi-Fi is not running, has no recent scan with enough access points, is backing off, knows its
/// scan already (its position cache answers, and only the cells are unknown), has a lookup out for other cells, or
/// has not scanned within ``wifiWaitLimit`` of promising to. An answer to such a query
/// (``combinedQueryAnswered(_:for:)``) at least as coarse as ``IchnaeaOutcome/smallestCellAccuracy`` placed the
/// cells: it is their answer. A finer one placed the access points and says nothing of the cells, which are then
/// asked about alone ``askAloneAfter`` after the first such answer if they still have no answer, so that there is
/// a position for them once the machine leaves the Wi-Fi. Cells the service does not know (404) are not sent
/// again for ``notFoundLifetime``. A start waits ``settleDelay`` before asking, so that Wi-Fi's first lookup,
/// made on the scan it reads at its start, carries the cells.
///
/// **Answers.** Kept in a ``CellAnswerCache`` per set of cells, saved beside the grants (`saveCache`) and read at
/// the first start (`loadCache`): a phone going back and forth between cells, or restarted, asks once for each
/// set the service knows for ``CellAnswerCache/maximumAge``. A change of cells is looked up once they have held
/// still for ``settleDelay``. ``IchnaeaOutcome`` interprets the answer, ``LookupBackoff`` spaces the tries after a
/// failure (a timer tries again when it ends, and ``NetworkChanges`` ends a transient one when the machine joins a
/// network, as for Wi-Fi), ``LookupRecord`` reports them.
///
/// **Availability.** Neighbourhood while some enabled modem offers its 3GPP location and the service can be used
/// (or the current cells' answer is known); otherwise none, with the modems' reason (`no-modem`,
/// `modem-disabled`, ...) or the service's (`service-unreachable`, ...).
@BusActor
public final class CellProvider: LocationProvider, CarriedCells {
    /// How long one lookup may take.
    public static let lookupTimeout: Duration = .seconds(20)
    /// How long the cells must hold still before a change is looked up: ModemManager reports a handover's new
    /// cell and the new access technologies in two updates, and the first alone names a cell with the wrong radio.
    /// A start waits as long, for Wi-Fi's first lookup to carry the cells.
    public static let settleDelay: Duration = .seconds(1)
    /// How long after a query with access points placed the machine by them the cells, still unanswered, are
    /// asked about alone.
    public static let askAloneAfter: Duration = .seconds(3600)
    /// How long the cells wait for a Wi-Fi lookup that said it would carry them before Wi-Fi is asked again (it
    /// says yes only while a lookup carrying them is in flight) or they are asked about alone.
    public static let wifiWaitLimit: Duration = .seconds(30)
    /// How long cells the service does not know (404) are not asked about again.
    public static let notFoundLifetime: Duration = .seconds(3600)

    public let kind = ProviderKind.cell
    public let minimumClientLevel = AccuracyLevel.neighborhood
    public var onFix: (@BusActor (Fix) -> Void)?
    public var onAvailabilityChanged: (@BusActor () -> Void)?

    /// The queries it shares with Wi-Fi, where `[wifi]` is on: asked first to send the cells with Wi-Fi's access
    /// points (``WiFiProvider/carryCells(_:)``); yes when Wi-Fi did or will (a lookup carrying them is in flight, or
    /// its first scan is awaited), no to ask alone. A promise Wi-Fi cannot keep ends with ``wifiDeclined()``, or
    /// after ``wifiWaitLimit``.
    public var combinedQueries: CombinedCellQueries?

    private var modemSource: ModemSource
    private let transport: any HTTPTransport
    private let url: String
    private let clock: any WhereaboutsCore.Clock
    private let timers: any TimerScheduler
    private let logger: any Logger
    private var cache: PersistedCache<CellAnswerCache>
    private let network: NetworkChanges?
    private var started = false
    /// Each modem's serving cell, by its object path; followed while stopped too, since ModemManager reports a
    /// cell only when it changes.
    private var cells: [String: ServingCell] = [:]
    /// Each modem's last report that gave no cell, so that it is logged once.
    private var rejected: [String: String] = [:]
    private var backoff = LookupBackoff()
    private var record = LookupRecord()
    private var health: ServiceHealth
    /// The cells of its own query in flight.
    private var inFlight: [ServingCell]?
    /// The cells a Wi-Fi lookup carries, or said it would, and since when.
    private var awaitingWiFi: (cells: [ServingCell], since: MonotonicTime)?
    /// The cells a query with access points first placed the machine without them, and when.
    private var placedWithoutCells: (cells: [ServingCell], at: MonotonicTime)?
    /// The sets of cells the service said it does not know, and when.
    private var unknownCells: [[ServingCell]: MonotonicTime] = [:]
    private var timer: ScheduledTimer?

    /// A provider reading the modems of `modems` and asking the geolocate `url` through `transport`; `loadCache`
    /// reads the answers saved before (at the first start), and `saveCache` keeps them durably; `network`, when
    /// given, says when the machine joins a network.
    public init(
        modems: any ModemLocationService, transport: any HTTPTransport, url: String,
        loadCache: @escaping @BusActor () -> CellAnswerCache, saveCache: @escaping @BusActor (CellAnswerCache) -> Void,
        network: NetworkChanges?, clock: any WhereaboutsCore.Clock, timers: any TimerScheduler, logger: any Logger
    ) {
        modemSource = ModemSource(.threeGPPCell, of: modems, for: .cell, serving: .neighborhood)
        self.transport = transport
        self.url = url
        health = ServiceHealth(label: "cells", url: url, whileFailing: "")
        cache = PersistedCache(empty: CellAnswerCache(), load: loadCache, keep: saveCache)
        self.network = network
        self.clock = clock
        self.timers = timers
        self.logger = logger
        modemSource.follow { [weak self] event in self?.handle(event) }
        network?.observe { [weak self] isOnline in self?.networkChanged(isOnline: isOnline) }
    }

    public var availableLevel: AccuracyLevel {
        guard modemSource.unavailability == nil else { return .none }
        return health.problem == nil || currentAnswer != nil ? .neighborhood : .none
    }

    public var unavailabilityReason: String? {
        guard availableLevel == .none else { return nil }
        return modemSource.unavailability ?? health.problem?.rawValue
    }

    public var details: [String: ProviderDetail] {
        var details = record.details.merging(modemSource.details(reason: unavailabilityReason)) { $1 }
        for (modem, cell) in cells { details["cell " + modem] = .text(cell.description) }
        if let combinedQueries { details["carried-by-wifi"] = .count(combinedQueries.answersCarried) }
        if !unknownCells.isEmpty { details["unknown-cells"] = .count(UInt32(unknownCells.count)) }
        if cache.isLoaded { details["cached-answers"] = .count(UInt32(cache.contents.count)) }
        return details
    }

    public func start() {
        cache.loadOnce()
        started = true
        network?.follow()
        modemSource.need()
        if combinedQueries != nil, currentAnswer == nil {
            schedule(after: Self.settleDelay)
        } else {
            locate()
        }
    }

    public func stop() {
        started = false
        awaitingWiFi = nil
        modemSource.release()
        if let timer { timers.cancelTimer(timer) }
        timer = nil
    }

    /// Offers the current cells' answer again while it stands.
    public func refresh() {
        guard started, let answer = currentAnswer else { return }
        deliver(answer)
    }

    /// The cells for a Wi-Fi lookup to carry: the modems' serving cells while they have no answer, the service
    /// has neither said lately that it does not know them nor refused them, and no query of them alone is in
    /// flight; none otherwise, so that what is already placed is not sent again and a refusal of the cells does
    /// not hold up Wi-Fi.
    public var cellsToCarry: [ServingCell] {
        let current = currentCells
        guard started, !current.isEmpty, currentAnswer == nil, inFlight != current, !isKnownUnknown(current),
            health.problem != .refused
        else { return [] }
        return current
    }

    /// Wi-Fi will not send the lookup it said would carry the cells (its first scan needed none, or it stopped):
    /// they are asked about again on the next turn of the loop, through Wi-Fi if it can carry them now, alone
    /// otherwise; a stop in the same turn (clients leaving stop Wi-Fi, then this provider) asks nothing.
    public func wifiDeclined() {
        guard awaitingWiFi != nil else { return }
        awaitingWiFi = nil
        if started { schedule(after: .zero) }
    }

    /// Takes the answer to a Wi-Fi lookup that carried `asked` with its access points: a position as coarse as a
    /// cell's is the cells' answer; a finer one placed the access points. A failure counts against the service
    /// only when the query was carried for this provider.
    ///
    /// A lookup it was waiting for, or one for the current cells while it waits for none, is taken as its own:
    /// a failure counts in its backoff and a 404 marks the cells unknown. Of any other, only a position is kept.
    public func combinedQueryAnswered(_ result: Result<HTTPResponse, HTTPFailure>, for asked: [ServingCell]) {
        let awaited =
            awaitingWiFi?.cells == asked || (awaitingWiFi == nil && inFlight == nil && asked == currentCells)
        if awaitingWiFi?.cells == asked { awaitingWiFi = nil }
        if awaited, let timer {
            timers.cancelTimer(timer)
            self.timer = nil
        }
        let answer = result.map { IchnaeaOutcome.interpret($0, kind: .cells) }
        if case .success(.position(_, _, let accuracy)) = answer, accuracy < IchnaeaOutcome.smallestCellAccuracy {
            record.ended(at: clock.wallNow, "access-points-placed", source: "network")
            if placedWithoutCells?.cells != asked { placedWithoutCells = (asked, clock.monotonicNow) }
            if awaited { locate() }
            return
        }
        let isPosition = if case .success(.position) = answer { true } else { false }
        guard awaited || isPosition else { return }
        answered(answer, for: asked)
    }

    /// Ends a transient backoff and, while running and online, asks about the current cells at once if they are
    /// waiting for it.
    private func networkChanged(isOnline: Bool) {
        let waiting = !backoff.allowsAttempt(now: clock.monotonicNow)
        backoff.networkChanged()
        guard started, isOnline, waiting, backoff.allowsAttempt(now: clock.monotonicNow) else { return }
        locate()
    }

    /// The modems' cells, in a fixed order.
    private var currentCells: [ServingCell] { CellAnswerCache.key(cells.keys.sorted().compactMap { cells[$0] }) }

    /// The answer for the current cells, while it stands.
    private var currentAnswer: CellAnswerCache.Entry? {
        let current = currentCells
        guard !current.isEmpty else { return nil }
        return cache.contents.lookup(current, now: clock.wallNow)
    }

    /// Whether the service said lately that it does not know `cells`.
    private func isKnownUnknown(_ cells: [ServingCell]) -> Bool {
        guard let since = unknownCells[cells] else { return false }
        return clock.monotonicNow - since < Self.notFoundLifetime
    }

    private func handle(_ event: ModemLocationEvent) {
        switch event {
        case .availabilityChanged:
            announceIfChanged()
        case .location(.servingCell(let text, let technologies, let modem)):
            let before = currentCells
            do {
                cells[modem] = try ServingCell(modemManagerLocation: text, accessTechnologies: technologies)
                rejected[modem] = nil
            } catch {
                cells[modem] = nil
                if rejected[modem] != text {
                    rejected[modem] = text
                    logger.info("cells: \(modem): no cell to look up in '\(text.prefix(60))': \(error)")
                }
            }
            if currentCells != before {
                announceIfChanged()
                if started { schedule(after: Self.settleDelay) }
            }
        case .locationGone(let sources, let modem) where sources.contains(.threeGPPCell):
            let before = currentCells
            cells[modem] = nil
            rejected[modem] = nil
            if currentCells != before {
                announceIfChanged()
                if started { schedule(after: Self.settleDelay) }
            }
        case .location, .locationGone:
            return
        }
    }

    private func announceIfChanged() {
        if modemSource.levelChanged(to: availableLevel) { onAvailabilityChanged?() }
    }

    /// Delivers the current cells' answer, or asks for one: through Wi-Fi's lookup when it can carry the cells,
    /// alone otherwise (and an hour after a Wi-Fi lookup placed the access points without them).
    private func locate() {
        let current = currentCells
        guard started, !current.isEmpty else { return }
        if let answer = currentAnswer {
            deliver(answer)
            return
        }
        guard inFlight == nil else { return }
        let now = clock.monotonicNow
        if let awaiting = awaitingWiFi {
            if awaiting.cells == current, now - awaiting.since < Self.wifiWaitLimit {
                schedule(after: Self.wifiWaitLimit - (now - awaiting.since))
                return
            }
            // Wi-Fi's lookup was for other cells, or has kept these waiting long: Wi-Fi is asked again, and says yes
            // only while a lookup carrying them is still in flight.
            awaitingWiFi = nil
        }
        guard backoff.allowsAttempt(now: now) else {
            if let retryAt = backoff.retryAt { schedule(after: retryAt - now) }
            return
        }
        if let since = unknownCells[current], now - since < Self.notFoundLifetime {
            schedule(after: Self.notFoundLifetime - (now - since))
            return
        }
        var carriedByWiFi = true
        if let placed = placedWithoutCells, placed.cells == current {
            guard now - placed.at >= Self.askAloneAfter else {
                schedule(after: Self.askAloneAfter - (now - placed.at))
                return
            }
            carriedByWiFi = false
        }
        if carriedByWiFi, let combinedQueries, combinedQueries.carry(current) {
            awaitingWiFi = (current, now)
            schedule(after: Self.wifiWaitLimit)
            return
        }
        inFlight = current
        record.sent()
        let request = HTTPRequest(
            url: url, body: IchnaeaQuery.geolocate(accessPoints: [], cells: current), timeout: Self.lookupTimeout)
        let transport = self.transport
        BusActor.task { [weak self] in
            let result = await transport.post(request)
            guard let self else { return }
            self.inFlight = nil
            self.answered(result.map { IchnaeaOutcome.interpret($0, kind: .cells) }, for: current)
        }
    }

    /// Takes the outcome of a lookup of `asked`, its own or one Wi-Fi carried for it.
    private func answered(_ result: Result<IchnaeaOutcome, HTTPFailure>, for asked: [ServingCell]) {
        let now = clock.monotonicNow
        defer { announceIfChanged() }
        let outcome: IchnaeaOutcome
        switch result {
        case .failure(let failure):
            record.ended(at: clock.wallNow, "failed", message: failure.description)
            let step = backoff.record(failure, now: now)
            health.note(.unreachable, failure.description, retryAt: step.retryAt, now: now, logger: logger)
            if started { schedule(after: step.retryAt - now) }
            return
        case .success(let interpreted):
            outcome = interpreted
        }
        let summary = outcome.summary
        record.ended(at: clock.wallNow, summary.outcome, source: "network", message: summary.message)
        let step = backoff.record(outcome, now: now)
        health.note(outcome.problem, summary.message ?? "", retryAt: step?.retryAt, now: now, logger: logger)
        if let step, started { schedule(after: step.retryAt - now) }
        switch outcome {
        case .position(let latitude, let longitude, let accuracy):
            cache.contents.store(
                latitude: latitude, longitude: longitude, accuracy: accuracy, for: asked, now: clock.wallNow)
            cache.save()
            if asked == currentCells, let answer = currentAnswer { deliver(answer) }
        case .notFound:
            unknownCells = unknownCells.filter { now - $0.value < Self.notFoundLifetime }
            if unknownCells.count < CellAnswerCache.defaultCapacity { unknownCells[asked] = now }
            if started, asked == currentCells { schedule(after: Self.notFoundLifetime) }
            logger.info("cells: the service knows none of \(asked.map(\.description).joined(separator: ", "))")
        case .refused, .serverTrouble, .malformed:
            break
        }
        // The cells changed while this lookup was out: theirs is due.
        if started, asked != currentCells { locate() }
    }

    private func schedule(after delay: Duration) {
        if let timer { timers.cancelTimer(timer) }
        timer = timers.scheduleOnBus(after: max(delay, .zero)) { [weak self] in
            guard let self else { return }
            self.timer = nil
            self.locate()
        }
    }

    /// The current cells' answer while it stands and the provider runs: the fusion rule checks Wi-Fi's and IP
    /// positioning's answers against it (``SourceAgreement``).
    public var standingFix: Fix? {
        guard started, let answer = currentAnswer else { return nil }
        return fix(answer)
    }

    private func deliver(_ answer: CellAnswerCache.Entry) {
        guard started else { return }
        onFix?(fix(answer))
    }

    private func fix(_ answer: CellAnswerCache.Entry) -> Fix {
        Fix(
            latitude: answer.latitude, longitude: answer.longitude, horizontalAccuracy: answer.accuracy,
            timestamp: clock.wallNow, provider: .cell, description: "Cell towers")
    }

}
