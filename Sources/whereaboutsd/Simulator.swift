import GeoClueService
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsProviders

/// `Simulate`'s recorded tracks, played by a ``ReplayProvider`` in the place of the daemon's providers.
@BusActor
final class ReplaySimulator: TrackSimulator {
    private let locator: Locator
    private let clock: any WhereaboutsCore.Clock

    init(locator: Locator, clock: any WhereaboutsCore.Clock) {
        self.locator = locator
        self.clock = clock
    }

    func prepare(track: String, name: String, speed: Double, loops: Bool) throws(SimulationError) -> any Simulation {
        do {
            let schedule = try ReplaySchedule(track: try Track.parse(text: track, fileName: name), speed: speed)
            return ReplaySimulation(
                provider: ReplayProvider(schedule: schedule, loops: loops, clock: clock, timers: EventLoop.main),
                locator: locator)
        } catch {
            throw SimulationError("\(name): \(error)")
        }
    }
}

/// One prepared track.
@BusActor
final class ReplaySimulation: Simulation {
    private let provider: ReplayProvider
    private let locator: Locator

    init(provider: ReplayProvider, locator: Locator) {
        self.provider = provider
        self.locator = locator
    }

    func start(onFinished: @escaping @BusActor () -> Void) {
        provider.onFinished = onFinished
        locator.simulate(provider)
    }

    func stop() { locator.endSimulation(provider) }
}
