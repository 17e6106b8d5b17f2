import GeoClueService
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsProviders

/// `Simulate`'s recorded tracks, played by a ``ReplayProvider`` in the place of the daemon's providers.
@BusActor
final class ReplaySimulator: TrackSimulator {
    private let providers: ProviderSet
    private let clock: any WhereaboutsCore.Clock

    init(providers: ProviderSet, clock: any WhereaboutsCore.Clock) {
        self.providers = providers
        self.clock = clock
    }

    func prepare(track: String, name: String, speed: Double, loops: Bool) throws(SimulationError) -> any Simulation {
        do {
            let schedule = try ReplaySchedule(track: try Track.parse(text: track, fileName: name), speed: speed)
            return ReplaySimulation(
                provider: ReplayProvider(schedule: schedule, loops: loops, clock: clock, timers: EventLoop.main),
                providers: providers)
        } catch {
            throw SimulationError("\(name): \(error)")
        }
    }
}

/// One prepared track.
@BusActor
final class ReplaySimulation: Simulation {
    private let provider: ReplayProvider
    private let providers: ProviderSet

    init(provider: ReplayProvider, providers: ProviderSet) {
        self.provider = provider
        self.providers = providers
    }

    func start(onFinished: @escaping @BusActor () -> Void) {
        provider.onFinished = onFinished
        providers.simulate(provider)
    }

    func stop() { providers.endSimulation(provider) }
}
