import Loop
import LoopScheduling
import WhereaboutsCore

/// IP positioning (`[ip]`, GeoClue 2.8's `method=ichnaea`): an empty geolocate query, which the service answers
/// from the address it comes from, at city level.
///
/// It runs for clients served at city level and above, asks once when started and again every
/// ``refreshInterval`` while it runs (an answer younger than that is served again at the next start without
/// asking), and spaces its tries after a failure with ``LookupBackoff``. Its fixes say `GeoIP` and come from
/// provider `ip`, so they are never taken for Wi-Fi fixes. It is available at city level until the service
/// fails, and again with its next answer.
///
/// An answer is the position of the network the machine was on: when ``NetworkChanges`` says the machine joined
/// another, the answer is dropped and, while running, asked again at once, a transient backoff ended; an answer
/// that arrives for a network left meanwhile is not shown.
///
/// **Tunnels.** While ``NetworkChanges`` says traffic to the Internet goes through a tunnel (a VPN), the address
/// the service would see is the tunnel's far end, often in another country: no lookup is made, the answer is
/// dropped, and the provider is unavailable with the reason `vpn`. When traffic leaves the tunnel it asks again at
/// once. `[ip] through-vpn=true` (``asksThroughTunnels``) asks all the same.
@BusActor
public final class IPProvider: LocationProvider {
    /// How long an answer stands before it is asked again.
    public static let refreshInterval: Duration = .seconds(1800)
    /// How long one lookup may take.
    public static let lookupTimeout: Duration = .seconds(20)

    public let kind = ProviderKind.ip
    public let minimumClientLevel = AccuracyLevel.city
    public var onFix: (@BusActor (Fix) -> Void)?
    public var onAvailabilityChanged: (@BusActor () -> Void)?

    private let transport: any HTTPTransport
    private let url: String
    private let accuracyOverride: Double?
    private let clock: any WhereaboutsCore.Clock
    private let timers: any TimerScheduler
    private let logger: any Logger
    private var started = false
    private var backoff = LookupBackoff()
    private var record = LookupRecord()
    private var health: ServiceHealth
    private var lookupInFlight = false
    private var answer: (fix: Fix, at: MonotonicTime)?
    private var timer: ScheduledTimer?
    private let network: NetworkChanges?
    /// `[ip] through-vpn=`: look up even while traffic goes through a tunnel.
    private let asksThroughTunnels: Bool
    /// Traffic to the Internet goes through a tunnel, and no lookup is made meanwhile.
    private var heldByTunnel: Bool { !asksThroughTunnels && network?.throughTunnel == true }

    /// A provider asking `url` through `transport`; `accuracy` (`[ip] accuracy=`) replaces the server's radius;
    /// `network`, when given, says when the machine changes networks and when its traffic goes through a tunnel,
    /// when no lookup is made unless `asksThroughTunnels`.
    public init(
        transport: any HTTPTransport, url: String, accuracy: Double?, network: NetworkChanges?,
        asksThroughTunnels: Bool = false, clock: any WhereaboutsCore.Clock, timers: any TimerScheduler,
        logger: any Logger
    ) {
        self.asksThroughTunnels = asksThroughTunnels
        self.transport = transport
        self.url = url
        health = ServiceHealth(label: "IP positioning", url: url, whileFailing: "")
        accuracyOverride = accuracy
        self.network = network
        self.clock = clock
        self.timers = timers
        self.logger = logger
        network?.observe { [weak self] isOnline in self?.networkChanged(isOnline: isOnline) }
        network?.observeTunnel { [weak self] through in self?.tunnelChanged(through) }
    }

    public var availableLevel: AccuracyLevel { health.problem == nil && !heldByTunnel ? .city : .none }
    public var unavailabilityReason: String? { heldByTunnel ? "vpn" : health.problem?.rawValue }

    public var details: [String: ProviderDetail] {
        var details = record.details
        if let reason = unavailabilityReason { details["reason"] = .text(reason) }
        return details
    }

    public func start() {
        started = true
        network?.follow()
        if let answer, clock.monotonicNow - answer.at < Self.refreshInterval {
            onFix?(answer.fix)
            schedule(after: Self.refreshInterval - (clock.monotonicNow - answer.at))
        } else {
            lookUp()
        }
    }

    public func stop() {
        started = false
        if let timer { timers.cancelTimer(timer) }
        timer = nil
    }

    /// Offers the current answer again while it stands (younger than ``refreshInterval``).
    public func refresh() {
        guard started, let answer, clock.monotonicNow - answer.at < Self.refreshInterval else { return }
        onFix?(answer.fix)
    }

    private func schedule(after delay: Duration) {
        if let timer { timers.cancelTimer(timer) }
        timer = timers.scheduleOnBus(after: delay) { [weak self] in
            guard let self else { return }
            self.timer = nil
            if self.started { self.lookUp() }
        }
    }

    /// Drops the answer, which was the last network's, and asks again now while running and online.
    private func networkChanged(isOnline: Bool) {
        answer = nil
        backoff.networkChanged()
        guard started, isOnline else { return }
        if let timer { timers.cancelTimer(timer) }
        timer = nil
        logger.info("IP positioning: the network changed; asking again")
        lookUp()
    }

    /// Traffic started or stopped going through a tunnel: no lookup meanwhile, and one at once after.
    private func tunnelChanged(_ through: Bool) {
        guard !asksThroughTunnels else { return }
        answer = nil
        if let timer { timers.cancelTimer(timer) }
        timer = nil
        onAvailabilityChanged?()
        if through {
            logger.info(
                "IP positioning: traffic goes through a VPN, whose address says nothing of this network; "
                    + "no lookup until it does not ([ip] through-vpn=false)")
            return
        }
        backoff.networkChanged()
        guard started else { return }
        logger.info("IP positioning: traffic no longer goes through a VPN; asking again")
        lookUp()
    }

    private func lookUp() {
        guard !lookupInFlight, !heldByTunnel else { return }
        let now = clock.monotonicNow
        guard backoff.allowsAttempt(now: now) else {
            // Started again within a backoff: the try waits for its end rather than being dropped.
            if let retryAt = backoff.retryAt { retryLater(at: retryAt) }
            return
        }
        lookupInFlight = true
        record.sent()
        let request = HTTPRequest(url: url, body: IchnaeaQuery.ip(), timeout: Self.lookupTimeout)
        let transport = self.transport
        let generation = network?.generation
        BusActor.task { [weak self] in
            let result = await transport.post(request)
            self?.answered(result, generation: generation)
        }
    }

    private func answered(_ result: Result<HTTPResponse, HTTPFailure>, generation: UInt64?) {
        lookupInFlight = false
        // Asked before traffic went through a tunnel, or through it: the answer is not this network's to trust.
        guard !heldByTunnel else { return }
        guard generation == network?.generation else {
            // Asked on the network left meanwhile: whatever came back is that network's, so ask again.
            if started { lookUp() }
            return
        }
        let now = clock.monotonicNow
        let outcome: IchnaeaOutcome
        switch result {
        case .failure(let failure):
            record.ended(at: clock.wallNow, "failed", message: failure.description)
            let step = backoff.record(failure, now: now)
            report(.unreachable, failure.description, retryAt: step.retryAt, now: now)
            retryLater(at: step.retryAt)
            return
        case .success(let response):
            outcome = IchnaeaOutcome.interpret(response, kind: .ip)
        }
        let summary = outcome.summary
        record.ended(at: clock.wallNow, summary.outcome, source: "network", message: summary.message)
        let step = backoff.record(outcome, now: now)
        report(outcome.problem, summary.message ?? "", retryAt: step?.retryAt, now: now)
        if let step { retryLater(at: step.retryAt) }
        switch outcome {
        case .position(let latitude, let longitude, let accuracy):
            let fix = Fix(
                latitude: latitude, longitude: longitude, horizontalAccuracy: accuracyOverride ?? accuracy,
                timestamp: clock.wallNow, provider: .ip, description: "GeoIP")
            answer = (fix, now)
            if started {
                onFix?(fix)
                schedule(after: Self.refreshInterval)
            }
        case .notFound:
            logger.info("IP positioning: the service cannot place this address")
            if started { schedule(after: Self.refreshInterval) }
        case .refused, .serverTrouble, .malformed:
            break
        }
    }

    private func retryLater(at time: MonotonicTime) {
        guard started else { return }
        schedule(after: time - clock.monotonicNow)
    }

    /// Notes the service's state, logging once when it changes and telling the set when availability does.
    private func report(_ newProblem: ServiceProblem?, _ message: String, retryAt: MonotonicTime?, now: MonotonicTime) {
        if health.note(newProblem, message, retryAt: retryAt, now: now, logger: logger) { onAvailabilityChanged?() }
    }
}
