import Loop
import TestBasics
import Testing
import WhereaboutsCore
import WhereaboutsProviders

@Suite("ProviderSet: demand and simulations")
@BusActor
struct ProviderSetTests {
    @Test func aSimulationTakesThePlaceOfEveryProviderUntilItEnds() {
        let clock = ManualClock()
        let real = HandProvider(.static)
        let simulated = HandProvider(.replay)
        let set = ProviderSet([real], clock: clock, logger: SilentLogger())
        var delivered: [Double] = []
        set.onFix = { delivered.append($0.latitude) }
        set.setDemand(.exact)
        real.report(latitude: 1, at: clock)
        #expect(real.isRunning)

        set.simulate(simulated)
        #expect(!real.isRunning && simulated.isRunning)
        clock.advance(by: .seconds(1))
        real.report(latitude: 2, at: clock)
        simulated.report(latitude: 3, at: clock)
        #expect(set.status.last?.kind == "simulation")

        set.setDemand(nil)
        #expect(simulated.isRunning, "a simulation plays whether or not a client needs it")
        set.setDemand(.exact)
        set.endSimulation(simulated)
        #expect(!simulated.isRunning && real.isRunning)
        clock.advance(by: .seconds(1))
        real.report(latitude: 4, at: clock)
        #expect(delivered == [1, 3, 4])
        #expect(set.status.count == 1)
    }

    @Test func endingAnotherSimulationChangesNothing() {
        let clock = ManualClock()
        let first = HandProvider(.replay)
        let second = HandProvider(.replay)
        let set = ProviderSet([], clock: clock, logger: SilentLogger())
        set.simulate(first)
        set.simulate(second)
        #expect(!first.isRunning && second.isRunning)
        set.endSimulation(first)
        #expect(second.isRunning && set.availableLevel == .exact)
        set.endSimulation(second)
        #expect(set.availableLevel == .none)
    }
}
