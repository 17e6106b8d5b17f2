import Loop
import WhereaboutsCore

/// Cell positioning (`[3g]`): the cell each modem is registered on (ModemManager's 3GPP location with the modem's
/// access technologies, ``ServingCell``), looked up at the Ichnaea-compatible service Wi-Fi positioning asks, at
/// neighbourhood level.
///
/// **What leaves the machine.** Only each serving cell's radio, country, network and area codes and cell id
/// (``IchnaeaQuery/geolocate(accessPoints:cells:)``, with no access points), and only while a client at
/// neighbourhood level or above runs. A cell that is not a place (a test network, an "unknown" placeholder, CDMA)
/// is never sent; the first such report of each modem is logged. The IP fallback is off, so an answer is never a
/// position of the machine's address; Ichnaea's cell-area fallback (`lacf`) is allowed.
///
/// **Lookups.** The same machinery as Wi-Fi: ``IchnaeaOutcome`` interprets the answer, ``LookupBackoff`` spaces
/// the tries after a failure (a timer tries again when it ends), ``LookupRecord`` reports them. An answer is kept
/// for ``answerLifetime`` per set of cells (the last ``maximumAnswers``), so a phone going back and forth between
/// cells asks once for each; it is asked again when the cells change (once they have held still for
/// ``settleDelay``) or the answer ages.
///
/// **Availability.** Neighbourhood while some enabled modem offers its 3GPP location and the service can be used
/// (or the current cells' answer is known); otherwise none, with the modems' reason (`no-modem`,
/// `modem-disabled`, ...) or the service's (`service-unreachable`, ...).
@BusActor
public final class CellProvider: LocationProvider {
    /// How long an answer for a set of cells stands.
    public static let answerLifetime: Duration = .seconds(3600)
    /// How many answers are kept.
    public static let maximumAnswers = 64
    /// How long one lookup may take.
    public static let lookupTimeout: Duration = .seconds(20)
    /// How long the cells must hold still before a change is looked up: ModemManager reports a handover's new
    /// cell and the new access technologies in two updates, and the first alone names a cell with the wrong radio.
    public static let settleDelay: Duration = .seconds(1)

    public let kind = ProviderKind.cell
    public let minimumClientLevel = AccuracyLevel.neighborhood
    public var onFix: (@BusActor (Fix) -> Void)?
    public var onAvailabilityChanged: (@BusActor () -> Void)?

    private let modems: any ModemLocationService
    private let transport: any HTTPTransport
    private let url: String
    private let clock: any WhereaboutsCore.Clock
    private let timers: any TimerScheduler
    private let logger: any Logger
    private var started = false
    /// Each modem's serving cell, by its object path; followed while stopped too, since ModemManager reports a
    /// cell only when it changes.
    private var cells: [String: ServingCell] = [:]
    /// Each modem's last report that gave no cell, so that it is logged once.
    private var rejected: [String: String] = [:]
    private var answers: [[ServingCell]: (latitude: Double, longitude: Double, accuracy: Double, at: MonotonicTime)] =
        [:]
    private var backoff = LookupBackoff()
    private var record = LookupRecord()
    private var problem: ServiceProblem?
    private var lookupInFlight = false
    private var timer: ScheduledTimer?
    private var lastLevel: AccuracyLevel

    /// A provider reading the modems of `modems` and asking the geolocate `url` through `transport`.
    public init(
        modems: any ModemLocationService, transport: any HTTPTransport, url: String,
        clock: any WhereaboutsCore.Clock, timers: any TimerScheduler, logger: any Logger
    ) {
        self.modems = modems
        self.transport = transport
        self.url = url
        self.clock = clock
        self.timers = timers
        self.logger = logger
        lastLevel = .none
        lastLevel = availableLevel
        modems.observe { [weak self] event in self?.handle(event) }
    }

    public var availableLevel: AccuracyLevel {
        guard modems.unavailability(of: .threeGPPCell) == nil else { return .none }
        return problem == nil || currentAnswer != nil ? .neighborhood : .none
    }

    public var unavailabilityReason: String? {
        guard availableLevel == .none else { return nil }
        return modems.unavailability(of: .threeGPPCell) ?? problem?.rawValue
    }

    public var details: [String: ProviderDetail] {
        var details = record.details.merging(modems.details(reason: unavailabilityReason)) { $1 }
        for (modem, cell) in cells { details["cell " + modem] = .text(cell.description) }
        return details
    }

    public func start() {
        started = true
        modems.setNeeded(.threeGPPCell, by: .cell)
        locate()
    }

    public func stop() {
        started = false
        modems.setNeeded([], by: .cell)
        if let timer { timers.cancelTimer(timer) }
        timer = nil
    }

    /// Offers the current cells' answer again while it stands.
    public func refresh() {
        guard started, let answer = currentAnswer else { return }
        deliver(answer.latitude, answer.longitude, answer.accuracy)
    }

    /// The modems' serving cells now, in a fixed order; Wi-Fi lookups carry them too
    /// (``WiFiProvider/servingCells``).
    public var servingCells: [ServingCell] { currentCells }

    /// The modems' cells, in a fixed order.
    private var currentCells: [ServingCell] { cells.keys.sorted().compactMap { cells[$0] } }

    /// The answer for the current cells, while it stands.
    private var currentAnswer: (latitude: Double, longitude: Double, accuracy: Double, at: MonotonicTime)? {
        guard let answer = answers[currentCells], clock.monotonicNow - answer.at < Self.answerLifetime else {
            return nil
        }
        return answer
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
        case .location:
            return
        }
    }

    private func announceIfChanged() {
        let level = availableLevel
        guard level != lastLevel else { return }
        lastLevel = level
        onAvailabilityChanged?()
    }

    /// Delivers the current cells' answer, or asks for one.
    private func locate() {
        let current = currentCells
        guard started, !current.isEmpty else { return }
        if let answer = currentAnswer {
            deliver(answer.latitude, answer.longitude, answer.accuracy)
            schedule(after: Self.answerLifetime - (clock.monotonicNow - answer.at))
            return
        }
        guard !lookupInFlight else { return }
        guard backoff.allowsAttempt(now: clock.monotonicNow) else {
            if let retryAt = backoff.retryAt { schedule(after: retryAt - clock.monotonicNow) }
            return
        }
        lookupInFlight = true
        record.sent()
        let request = HTTPRequest(
            url: url, body: IchnaeaQuery.geolocate(accessPoints: [], cells: current), timeout: Self.lookupTimeout)
        let transport = self.transport
        BusActor.task { [weak self] in
            let result = await transport.post(request)
            self?.answered(result, for: current)
        }
    }

    private func answered(_ result: Result<HTTPResponse, HTTPFailure>, for asked: [ServingCell]) {
        lookupInFlight = false
        let now = clock.monotonicNow
        defer { announceIfChanged() }
        let outcome: IchnaeaOutcome
        switch result {
        case .failure(let failure):
            record.ended(at: clock.wallNow, "failed", message: failure.description)
            let step = backoff.record(failure, now: now)
            report(.unreachable, failure.description, retryAt: step.retryAt)
            if started { schedule(after: step.retryAt - now) }
            return
        case .success(let response):
            outcome = IchnaeaOutcome.interpret(response, kind: .cells)
        }
        let summary = outcome.summary
        record.ended(at: clock.wallNow, summary.outcome, source: "network", message: summary.message)
        let step = backoff.record(outcome, now: now)
        report(outcome.problem, summary.message ?? "", retryAt: step?.retryAt)
        if let step, started { schedule(after: step.retryAt - now) }
        switch outcome {
        case .position(let latitude, let longitude, let accuracy):
            if answers.count >= Self.maximumAnswers, let oldest = answers.min(by: { $0.value.at < $1.value.at }) {
                answers[oldest.key] = nil
            }
            answers[asked] = (latitude, longitude, accuracy, now)
            if asked == currentCells {
                deliver(latitude, longitude, accuracy)
                if started { schedule(after: Self.answerLifetime) }
            } else if started {
                locate()
            }
        case .notFound:
            logger.info("cells: the service knows none of \(asked.map(\.description).joined(separator: ", "))")
        case .refused, .serverTrouble, .malformed:
            break
        }
    }

    private func schedule(after delay: Duration) {
        if let timer { timers.cancelTimer(timer) }
        timer = timers.scheduleOnBus(after: max(delay, .zero)) { [weak self] in
            guard let self else { return }
            self.timer = nil
            self.locate()
        }
    }

    private func deliver(_ latitude: Double, _ longitude: Double, _ accuracy: Double) {
        guard started else { return }
        onFix?(
            Fix(
                latitude: latitude, longitude: longitude, horizontalAccuracy: accuracy, timestamp: clock.wallNow,
                provider: .cell, description: "Cell towers"))
    }

    /// Notes the service's state, logging once when it changes.
    private func report(_ newProblem: ServiceProblem?, _ message: String, retryAt: MonotonicTime?) {
        guard newProblem != problem else { return }
        if newProblem != nil {
            let retry = retryAt.map { " (next try in \(Int(($0 - clock.monotonicNow).seconds.rounded())) s)" } ?? ""
            logger.warning("cells: \(loggableURL(url)): \(message)\(retry)")
        } else {
            logger.notice("cells: \(loggableURL(url)) answers again")
        }
        problem = newProblem
    }
}
