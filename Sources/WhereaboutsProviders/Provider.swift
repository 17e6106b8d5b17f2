import Loop
import WhereaboutsCore

/// A source of fixes that the service starts while some client needs it.
@BusActor
public protocol LocationProvider: AnyObject {
    /// What kind of provider this is.
    var kind: ProviderKind { get }
    /// The best level it can deliver now; `.none` while it cannot deliver at all.
    var availableLevel: AccuracyLevel { get }
    /// The lowest client level that calls for this provider: a GNSS receiver is started only for `exact`
    /// clients, so a city-level client never wakes one.
    var minimumClientLevel: AccuracyLevel { get }
    /// Called with each fix while started.
    var onFix: (@BusActor (Fix) -> Void)? { get set }
    /// Called when ``availableLevel`` changes.
    var onAvailabilityChanged: (@BusActor () -> Void)? { get set }
    /// Begins producing fixes.
    func start()
    /// Stops producing fixes and releases what it held open for them.
    func stop()
    /// Told, while started, the highest level an active client is served at, whenever it changes.
    func demandChanged(_ level: AccuracyLevel)
    /// Asked, while started, for a fix now (a single-shot request is waiting): a provider whose current position
    /// changes seldom offers it again if it still holds; others do nothing, their next fix coming soon anyway.
    func refresh()
    /// Why ``availableLevel`` is `.none`, as a word for `AvailabilityChanged` (`service-unreachable`, `no-wifi`);
    /// nil says nothing more than `provider-lost`.
    var unavailabilityReason: String? { get }
    /// Facts for `io.github.whereabouts1.Manager.Providers`, such as the last lookup's outcome.
    var details: [String: ProviderDetail] { get }
    /// Whether `Providers` lists it as available: by default, while ``availableLevel`` is not `.none`; a provider
    /// that gives no positions (the compass) says so itself.
    var isAvailable: Bool { get }
    /// The position it holds now, against which the fusion rule checks the other sources' answers
    /// (``SourceAgreement``): the serving cells' answer, which stands as long as the cells do; nil by default.
    var standingFix: Fix? { get }
    /// Told that the fusion rule does not serve `disagreement.disputed`, one of its fixes, or stopped serving it:
    /// a better-placed source contradicts it (``SourceAgreement``). Wi-Fi forgets the answer.
    func answerDisputed(_ disagreement: Disagreement)
}

/// A provider that sees satellites: a GNSS receiver, whose sky `io.github.whereabouts1.Client.Satellites` shows.
@BusActor
public protocol SkyReporting: LocationProvider {
    /// Called, while started, with every satellite the receiver sees whenever it lists them again.
    var onSky: (@BusActor ([Satellite]) -> Void)? { get set }
}

extension LocationProvider {
    public func demandChanged(_ level: AccuracyLevel) {}
    public func refresh() {}
    public var unavailabilityReason: String? { nil }
    public var details: [String: ProviderDetail] { [:] }
    public var isAvailable: Bool { availableLevel != .none }
    public var standingFix: Fix? { nil }
    public func answerDisputed(_ disagreement: Disagreement) {}
}

/// The providers the daemon runs, started and stopped by demand, their fixes merged by one rule.
///
/// A provider runs while some active client is served at or above its ``LocationProvider/minimumClientLevel``.
/// Its fixes pass through a ``FixSelector`` (the fusion rule, documented there) before reaching the service; a fix
/// the rule disputes is logged once and its provider told. The service's `AvailableAccuracyLevel` is the best level
/// among the providers.
///
/// A simulation (``simulate(_:)``) takes the place of every provider until it ends: while it runs, the providers
/// are stopped and only its fixes reach the service. Unlike a provider it plays whether or not a client needs it,
/// so that a recorded track takes as long as it lasts.
///
/// The satellites the running receivers (``SkyReporting``) see are given together by ``onSky``, each time one of
/// them lists its sky again and when one stops, taking its satellites with it.
@BusActor
public final class ProviderSet {
    private var providers: [any LocationProvider]
    private var running: Set<ObjectIdentifier> = []
    private var demand: AccuracyLevel?
    private var simulation: (any LocationProvider)?
    private var selector: FixSelector
    private let clock: any WhereaboutsCore.Clock
    private let logger: any Logger
    /// The latest sky of each running receiver.
    private var skies: [ObjectIdentifier: [Satellite]] = [:]

    /// Called with every fix the fusion rule accepts.
    public var onFix: (@BusActor (Fix) -> Void)?
    /// Called when the best available level changes.
    public var onAvailableLevelChanged: (@BusActor (AccuracyLevel) -> Void)?
    /// Called with every satellite the running receivers see, by constellation and id, when that changes.
    public var onSky: (@BusActor ([Satellite]) -> Void)?

    /// The set of `providers`, logging the disagreements of their sources to `logger`.
    public init(_ providers: [any LocationProvider], clock: any WhereaboutsCore.Clock, logger: any Logger) {
        self.providers = providers
        self.clock = clock
        self.logger = logger
        selector = FixSelector()
        for provider in providers { connect(provider) }
    }

    /// Adds a provider made after the set, started at once if the current demand calls for it.
    public func add(_ provider: any LocationProvider) {
        let levelBefore = availableLevel
        providers.append(provider)
        connect(provider)
        apply()
        if availableLevel != levelBefore { onAvailableLevelChanged?(availableLevel) }
    }

    private func connect(_ provider: any LocationProvider) {
        let id = ObjectIdentifier(provider)
        provider.onFix = { [weak self] fix in
            guard let self, self.running.contains(id) else { return }
            let decision = self.selector.offer(fix, now: self.clock.monotonicNow, standing: self.standingFixes)
            if let disagreement = decision.disagreement { self.disputed(disagreement) }
            if decision.accepted { self.onFix?(fix) }
        }
        if let receiver = provider as? any SkyReporting {
            receiver.onSky = { [weak self] satellites in
                guard let self, self.running.contains(id) else { return }
                self.skies[id] = satellites
                self.skyChanged()
            }
        }
        provider.onAvailabilityChanged = { [weak self, weak provider] in
            guard let self, let provider else { return }
            if provider.availableLevel == .none { self.selector.providerLost(provider.kind) }
            self.onAvailableLevelChanged?(self.availableLevel)
        }
    }

    /// The best level any provider (or the simulation, while one runs) can deliver now.
    public var availableLevel: AccuracyLevel {
        if let simulation { return simulation.availableLevel }
        return providers.map(\.availableLevel).max() ?? .none
    }

    /// Why the best level is `.none`: the reason of the provider that said one, if any did.
    public var unavailabilityReason: String? {
        guard availableLevel == .none else { return nil }
        return providers.lazy.compactMap(\.unavailabilityReason).first
    }

    /// Each provider's kind, the level it serves, whether it can deliver now, whether it runs and what else it
    /// reports; a running simulation is listed last, as `simulation`.
    public var status: [ProviderStatus] {
        var rows = providers.map { provider in
            ProviderStatus(
                kind: provider.kind.rawValue, level: provider.minimumClientLevel,
                available: provider.isAvailable, running: running.contains(ObjectIdentifier(provider)),
                details: provider.details)
        }
        if let simulation {
            rows.append(
                ProviderStatus(
                    kind: "simulation", level: simulation.minimumClientLevel,
                    available: simulation.availableLevel != .none,
                    running: true))
        }
        return rows
    }

    /// Puts `provider` in the place of every provider (ending any earlier simulation) until ``endSimulation()``.
    public func simulate(_ provider: any LocationProvider) {
        let levelBefore = availableLevel
        simulation?.stop()
        simulation = provider
        provider.onFix = { [weak self, weak provider] fix in
            guard let self, let provider, self.simulation === provider else { return }
            self.onFix?(fix)
        }
        provider.onAvailabilityChanged = { [weak self] in
            guard let self else { return }
            self.onAvailableLevelChanged?(self.availableLevel)
        }
        apply()
        provider.start()
        if availableLevel != levelBefore { onAvailableLevelChanged?(availableLevel) }
    }

    /// Ends the simulation `provider`, if it is the one running; the providers serve again as demand calls for them.
    public func endSimulation(_ provider: any LocationProvider) {
        guard let ended = simulation, ended === provider else { return }
        let levelBefore = availableLevel
        ended.stop()
        simulation = nil
        apply()
        if availableLevel != levelBefore { onAvailableLevelChanged?(availableLevel) }
    }

    /// Asks the running providers for a fix now (``LocationProvider/refresh()``).
    public func refresh() {
        guard simulation == nil else { return }
        for provider in providers where running.contains(ObjectIdentifier(provider)) { provider.refresh() }
    }

    /// Runs the providers that `level` (the highest level an active client is served at) calls for, and stops
    /// the others; nil stops them all.
    public func setDemand(_ level: AccuracyLevel?) {
        demand = level
        apply()
    }

    private func apply() {
        for provider in providers {
            let id = ObjectIdentifier(provider)
            let wanted = simulation == nil && (demand.map { $0 >= provider.minimumClientLevel } ?? false)
            guard wanted != running.contains(id) else {
                if wanted, let demand { provider.demandChanged(demand) }
                continue
            }
            if wanted {
                running.insert(id)
                if let demand { provider.demandChanged(demand) }
                provider.start()
            } else {
                running.remove(id)
                provider.stop()
                selector.providerLost(provider.kind)
                if skies.removeValue(forKey: id) != nil { skyChanged() }
            }
        }
    }

    /// The positions the running providers hold now.
    private var standingFixes: [Fix] {
        providers.compactMap { running.contains(ObjectIdentifier($0)) ? $0.standingFix : nil }
    }

    /// Logs a disagreement the first time, and tells the disputed fix's provider.
    private func disputed(_ disagreement: Disagreement) {
        let disputed = disagreement.disputed
        if disagreement.isNew {
            let reference = disagreement.reference
            logger.notice(
                "fusion: \(disputed.provider.rawValue) (\(disputed.description), ±\(Int(disputed.horizontalAccuracy)) m) "
                    + "is \(kilometres(disagreement.distance)) from \(reference.provider.rawValue) "
                    + "(\(reference.description), ±\(Int(reference.horizontalAccuracy)) m), farther than their "
                    + "accuracies and travel allow (\(kilometres(disagreement.allowed))): not served")
        }
        for provider in providers where provider.kind == disputed.provider { provider.answerDisputed(disagreement) }
    }

    private func kilometres(_ metres: Double) -> String {
        let tenths = Int((metres / 100).rounded())
        return "\(tenths / 10).\(tenths % 10) km"
    }

    private func skyChanged() {
        onSky?(skies.values.joined().sorted(by: Satellite.listOrder))
    }
}
