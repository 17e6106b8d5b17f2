import DBus
import GeoClueService
import Loop
import TestBasics
import TestSupport
import WhereaboutsCore
import WhereaboutsStorage

/// The service in the test's own process, on a private bus, with a manual clock for its time and its timers:
/// fixes are handed to it directly, and a test moves time on with ``advance(by:)``, so timeouts and grace periods
/// are reached exactly, without waiting.
@BusActor
final class InProcessService {
    let bus: PrivateBus
    let clock = ManualClock()
    let service: GeoClueService
    /// The service's connection to the bus.
    let connection: Connection
    /// Every level the providers were asked for, in order (nil: none).
    private(set) var demands: [AccuracyLevel?] = []
    /// What the service logged.
    let log = LogLines()

    /// Starts the service on a new private bus, without polkit: every app is authorised, as with `polkit=false`
    /// and no agent. Regions and the history of use are kept in `regionStore` and `historyStore` when given, and in
    /// memory alone otherwise.
    init(regionStore: RegionStore? = nil, historyStore: HistoryStore? = nil) async throws {
        bus = try PrivateBus()
        connection = try Connection.open(address: bus.address)
        service = GeoClueService(
            connection: connection, configuration: .default, clock: clock, timers: clock, logger: log,
            regionStore: regionStore, historyStore: historyStore)
        service.onDemandChanged = { [weak self] level in self?.demands.append(level) }
        try await service.start()
        service.setAvailableLevel(.exact)
    }

    /// Moves the service's time on by `duration`, running every timer due by then.
    func advance(by duration: Duration) { clock.advance(by: duration) }

    /// Waits until the loop has run the work queued before this call: what another thread told the service (a
    /// store's writer, of a write that failed) has then been taken in.
    func runQueuedWork() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            EventLoop.main.execute { done.resume() }
        }
    }

    /// Hands the service a fix `metres` north of 51°N 10°E, measured now.
    func deliver(northOf metres: Double = 0) {
        service.deliver(
            Fix(
                latitude: 51 + metres / 111_195, longitude: 10, horizontalAccuracy: 5, timestamp: clock.wallNow,
                provider: .static, description: "in-process"))
    }

    /// A client of the service on its own connection.
    func app() async throws -> GeoClueTestClient { try await GeoClueTestClient(bus: bus) }

    /// Waits until the providers are asked for a level: the client's admission has ended and its timers are armed.
    func waitUntilDemanded() async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while demands.last.map({ $0 == nil }) ?? true {
            guard ContinuousClock.now < deadline else { throw TestEnvironmentError("the providers were never asked") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Waits until `condition` holds, for at most 10 s (what it waits for crosses the bus, which takes real time).
    func waitUntil(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw TestEnvironmentError("timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    func stop() {
        connection.close()
        bus.stop()
    }
}
