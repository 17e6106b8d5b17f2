import Loop
import WhereaboutsCore
import WhereaboutsProviders

/// A provider the test drives by hand; the locator's tests give it the roles Wi-Fi and the compass play.
@BusActor
class HandProvider: LocationProvider {
    let kind: ProviderKind
    let minimumClientLevel: AccuracyLevel
    var availableLevel: AccuracyLevel = .exact
    var onFix: (@BusActor (Fix) -> Void)?
    var onAvailabilityChanged: (@BusActor () -> Void)?
    private(set) var isRunning = false

    init(_ kind: ProviderKind, minimumClientLevel: AccuracyLevel = .country) {
        self.kind = kind
        self.minimumClientLevel = minimumClientLevel
    }

    func start() { isRunning = true }
    func stop() { isRunning = false }

    /// Offers a fix at `latitude`, `accuracy` metres wide, dated now on `clock`; a replay's is simulated.
    func report(latitude: Double, accuracy: Double = 5, at clock: ManualClock) {
        onFix?(
            Fix(
                latitude: latitude, longitude: 0, horizontalAccuracy: accuracy, timestamp: clock.wallNow,
                provider: kind, description: "hand", isSimulated: kind == .replay))
    }
}
