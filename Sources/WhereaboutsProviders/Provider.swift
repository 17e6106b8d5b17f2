import Loop
import WhereaboutsCore

/// A source of fixes that the service starts while some client needs it.
@BusActor
public protocol LocationProvider: AnyObject {
    /// What kind of provider this is.
    var kind: ProviderKind { get }
    /// The best level it can deliver now; `.none` while it cannot deliver at all.
    var availableLevel: AccuracyLevel { get }
    /// Called with each fix while started.
    var onFix: (@BusActor (Fix) -> Void)? { get set }
    /// Called when ``availableLevel`` changes.
    var onAvailabilityChanged: (@BusActor () -> Void)? { get set }
    /// Begins producing fixes.
    func start()
    /// Stops producing fixes and releases what it held open for them.
    func stop()
}

/// The providers the daemon runs, started and stopped by demand, their fixes and availability merged.
///
/// A provider runs only while at least one active client exists; the service's `AvailableAccuracyLevel` is the
/// best level among the providers.
@BusActor
public final class ProviderSet {
    private let providers: [any LocationProvider]
    private var running = false

    /// Called with every fix from a running provider.
    public var onFix: (@BusActor (Fix) -> Void)?
    /// Called when the best available level changes.
    public var onAvailableLevelChanged: (@BusActor (AccuracyLevel) -> Void)?

    public init(_ providers: [any LocationProvider]) {
        self.providers = providers
        for provider in providers {
            provider.onFix = { [weak self] fix in
                guard let self, self.running else { return }
                self.onFix?(fix)
            }
            provider.onAvailabilityChanged = { [weak self] in
                guard let self else { return }
                self.onAvailableLevelChanged?(self.availableLevel)
            }
        }
    }

    /// The best level any provider can deliver now.
    public var availableLevel: AccuracyLevel { providers.map(\.availableLevel).max() ?? .none }

    /// Starts the providers when `level` is set (some client is active), stops them when it is nil.
    public func setDemand(_ level: AccuracyLevel?) {
        let wanted = level != nil
        guard wanted != running else { return }
        running = wanted
        for provider in providers {
            if wanted { provider.start() } else { provider.stop() }
        }
    }
}
