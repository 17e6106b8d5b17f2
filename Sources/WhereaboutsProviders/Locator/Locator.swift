import Loop
import LoopScheduling
import WhereaboutsCore

/// The daemon's one path from the location sources to the clients: every fix takes the same stages, in this order,
/// before it leaves by ``onFix``.
///
/// 1. **Fusion.** The providers run as the clients' demand calls for them, and their fixes pass through one
///    ``FixSelector`` (a ``ProviderSet``).
/// 2. **Heading.** With a compass (``CompassSource``), the fix gets its heading (a ``HeadingStage``), and each turn
///    of the compass sends the latest fix again; without one, the fix passes straight on.
///
/// The satellites the running receivers see leave by ``onSky``, beside the fixes.
///
/// A **learning tap** on the fused fixes shows each satellite fix, once it has left, to the providers that learn
/// from them (``SatelliteFixLearner``: Wi-Fi remembers the places it scans there).
///
/// It also keeps what the providers share: the combined Wi-Fi and cell queries (``CombinedCellQueries``, where both
/// are among the providers), and the static provider an administrator's `SetStaticLocation` needs, made on demand
/// when none was configured.
@BusActor
public final class Locator {
    private let providers: ProviderSet
    private let learners: [any SatelliteFixLearner]
    private let headings: HeadingStage?
    private var staticProvider: StaticProvider?
    private let clock: any WhereaboutsCore.Clock
    private let timers: any TimerScheduler
    private let watches: any DescriptorWatcher
    private let logger: any Logger

    /// Called with every fix that leaves the pipeline, fused and headed.
    public var onFix: (@BusActor (Fix) -> Void)?
    /// Called when the best available level changes (`AvailableAccuracyLevel`).
    public var onAvailableLevelChanged: (@BusActor (AccuracyLevel) -> Void)?
    /// Called with the satellites the running receivers see when that changes (`Satellites`).
    public var onSky: (@BusActor ([Satellite]) -> Void)?

    /// A pipeline over `providers`, with the headings of the compass `source` (run as a provider too) turned to
    /// true north by `correction`; `clock`, `timers`, `watches` and `logger` serve the static provider it may make.
    public init(
        providers: [any LocationProvider], compass: (source: any CompassSource, correction: HeadingCorrection)?,
        clock: any WhereaboutsCore.Clock, timers: any TimerScheduler, watches: any DescriptorWatcher,
        logger: any Logger
    ) {
        self.providers = ProviderSet(providers + (compass.map { [$0.source] } ?? []), clock: clock, logger: logger)
        learners = providers.compactMap { $0 as? any SatelliteFixLearner }
        headings = compass.map { HeadingStage(compass: $0.source, correction: $0.correction, logger: logger) }
        if let lookup = providers.lazy.compactMap({ $0 as? any CellCarryingLookup }).first,
            let cells = providers.lazy.compactMap({ $0 as? any CarriedCells }).first
        {
            CombinedCellQueries.join(lookup: lookup, cells: cells)
        }
        staticProvider = providers.lazy.compactMap { $0 as? StaticProvider }.first
        self.clock = clock
        self.timers = timers
        self.watches = watches
        self.logger = logger
        headings?.onFix = { [weak self] in self?.onFix?($0) }
        self.providers.onFix = { [weak self] in self?.fused($0) }
        self.providers.onAvailableLevelChanged = { [weak self] in self?.onAvailableLevelChanged?($0) }
        self.providers.onSky = { [weak self] in self?.onSky?($0) }
    }

    private func fused(_ fix: Fix) {
        if let headings { headings.take(fix) } else { onFix?(fix) }
        if fix.provider.isSatellite { for learner in learners { learner.observeSatelliteFix(fix) } }
    }

    /// The best level any provider can deliver now (`AvailableAccuracyLevel`).
    public var availableLevel: AccuracyLevel { providers.availableLevel }

    /// Why the best level is `.none`, as a word for `AvailabilityChanged`; nil when there is none.
    public var unavailabilityReason: String? { providers.unavailabilityReason }

    /// Each provider's row of `io.github.whereabouts1.Manager.Providers`.
    public var status: [ProviderStatus] { providers.status }

    /// Runs the providers that `level` (the highest level an active client is served at) calls for; nil stops
    /// them all.
    public func setDemand(_ level: AccuracyLevel?) { providers.setDemand(level) }

    /// Asks the running providers for a fix now: a single-shot request is waiting.
    public func refresh() { providers.refresh() }

    /// Serves `location` from the static provider (`SetStaticLocation`), or the static file's location again when
    /// nil (`ClearStaticLocation`); the first location set where no static source is configured makes one.
    public func setStaticLocation(_ location: StaticLocation?) {
        if staticProvider == nil, location != nil {
            let provider = StaticProvider(path: nil, clock: clock, timers: timers, watches: watches, logger: logger)
            providers.add(provider)
            staticProvider = provider
        }
        staticProvider?.setLocation(location)
    }

    /// Plays `provider` in the place of every provider until ``endSimulation(_:)`` (`Simulate`); its fixes take the
    /// same stages.
    public func simulate(_ provider: any LocationProvider) { providers.simulate(provider) }

    /// Ends the simulation `provider`, if it is the one running.
    public func endSimulation(_ provider: any LocationProvider) { providers.endSimulation(provider) }
}
