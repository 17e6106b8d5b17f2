import Loop
import LoopScheduling
import TestBasics
import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// A Wi-Fi stand-in that keeps the satellite fixes it is shown.
@BusActor
private final class LearningProvider: HandProvider, SatelliteFixLearner {
    private(set) var observed: [ProviderKind] = []

    init() { super.init(.wifi) }

    func observeSatelliteFix(_ fix: Fix) { observed.append(fix.provider) }
}

/// A Wi-Fi stand-in for the combined queries: the cells each lookup was asked to carry, and whether it does.
@BusActor
private final class CarryingProvider: HandProvider, CellCarryingLookup {
    var combinedQueries: CombinedCellQueries?
    var carries = true
    private(set) var carried: [[ServingCell]] = []

    init() { super.init(.wifi, minimumClientLevel: .neighborhood) }

    func carryCells(_ cells: [ServingCell]) -> Bool {
        carried.append(cells)
        return carries
    }
}

/// A compass the test turns by hand.
@BusActor
private final class TurnedCompass: HandProvider, CompassSource {
    var onHeading: (@BusActor (Double?) -> Void)?
    private(set) var heading: Double?

    init() {
        super.init(.compass, minimumClientLevel: .exact)
        availableLevel = .none
    }

    func turn(to heading: Double?) {
        self.heading = heading
        onHeading?(heading)
    }
}

/// The locator on a manual clock: the stages a fix takes in order (fusion, learning, heading), the queries Wi-Fi
/// and the cells share, and the static provider it makes on demand.
@Suite("Locator: one fix pipeline")
@BusActor
struct LocatorTests {
    private let clock = ManualClock()

    private func locator(_ providers: [any LocationProvider], compass: TurnedCompass? = nil) -> (Locator, FixLog) {
        let locator = Locator(
            providers: providers, compass: compass.map { ($0, HeadingCorrection(model: nil)) }, clock: clock,
            timers: clock, watches: EventLoop.main, logger: SilentLogger())
        let delivered = FixLog()
        locator.onFix = { delivered.fixes.append($0) }
        return (locator, delivered)
    }

    @Test func aFusedFixGetsItsHeadingBeforeItLeavesAndATurnSendsItAgain() {
        let gpsd = HandProvider(.gpsd, minimumClientLevel: .exact)
        let ip = HandProvider(.ip)
        let compass = TurnedCompass()
        let (locator, delivered) = locator([gpsd, ip], compass: compass)
        locator.setDemand(.exact)
        #expect(compass.isRunning, "the compass runs as a provider")
        compass.turn(to: 90)
        #expect(delivered.fixes.isEmpty, "a turn before any fix sends nothing")

        gpsd.report(latitude: 46.5, at: clock)
        ip.report(latitude: 47, accuracy: 20_000, at: clock)
        #expect(delivered.fixes.map(\.provider) == [.gpsd], "the fusion rule refuses the coarse fix first")
        #expect(delivered.fixes.first?.magneticHeading == 90)
        #expect(delivered.fixes.first?.headingAccuracy == HeadingCorrection.headingAccuracy)

        compass.turn(to: 180)
        #expect(delivered.fixes.map(\.latitude) == [46.5, 46.5])
        #expect(delivered.fixes.last?.magneticHeading == 180)
        compass.turn(to: nil)
        #expect(delivered.fixes.count == 2, "a compass that loses its heading sends nothing")
    }

    @Test func withoutACompassAFixPassesStraight() {
        let gpsd = HandProvider(.gpsd)
        let (locator, delivered) = locator([gpsd])
        locator.setDemand(.exact)
        gpsd.report(latitude: 46.5, at: clock)
        #expect(
            delivered.fixes
                == [
                    Fix(
                        latitude: 46.5, longitude: 0, horizontalAccuracy: 5, timestamp: clock.wallNow, provider: .gpsd,
                        description: "hand")
                ])
    }

    @Test func theLearningTapSeesSatelliteFixesOnly() {
        let wifi = LearningProvider()
        let gpsd = HandProvider(.gpsd)
        let (locator, delivered) = locator([wifi, gpsd])
        locator.setDemand(.exact)
        wifi.report(latitude: 46.5, accuracy: 30, at: clock)
        clock.advance(by: .seconds(1))
        gpsd.report(latitude: 46.5, at: clock)
        #expect(delivered.fixes.map(\.provider) == [.wifi, .gpsd])
        #expect(wifi.observed == [.gpsd])
    }

    /// A locator over the cell provider, its modem on one cell, and a Wi-Fi stand-in, run for a neighbourhood
    /// client until the cells have settled.
    private func cellsAndWiFi(service: ScriptedService) -> (Locator, CarryingProvider, FixLog) {
        let modems = FakeModems()
        let cell = CellProvider(
            modems: modems, transport: service, url: "https://location.example/v1/geolocate",
            loadCache: { CellAnswerCache() }, saveCache: { _ in }, network: nil, clock: clock, timers: clock,
            logger: SilentLogger())
        let wifi = CarryingProvider()
        let (locator, delivered) = locator([wifi, cell])
        modems.send(.location(.servingCell(CellProviderTests.lte, .lte, modem: "/m/0")))
        locator.setDemand(.neighborhood)
        clock.advance(by: CellProvider.settleDelay)
        return (locator, wifi, delivered)
    }

    private var servingCell: ServingCell {
        get throws { try ServingCell(modemManagerLocation: CellProviderTests.lte, accessTechnologies: .lte) }
    }

    @Test func aCombinedQueryCarriesTheCellsAndItsAnswerReachesTheCellSide() async throws {
        let service = ScriptedService()
        let (locator, wifi, delivered) = cellsAndWiFi(service: service)
        #expect(wifi.carried == [[try servingCell]], "the cells asked Wi-Fi to carry them")
        let queries = try #require(wifi.combinedQueries)
        #expect(queries.cellsToCarry == [try servingCell], "Wi-Fi's lookup takes the cells with no answer")

        queries.answered(position, carrying: [try servingCell])
        #expect(delivered.fixes.map(\.provider) == [.cell], "a cell-wide answer is the cells' fix")
        #expect(queries.answersCarried == 1)
        for _ in 0..<1000 { await Task.yield() }
        #expect(service.requests == 0, "nothing was asked alone")
        withExtendedLifetime(locator) {}
    }

    @Test func aDeclinedQueryFallsBackToAskingTheCellsAlone() async throws {
        let service = ScriptedService()
        service.willAnswer(position)
        let (locator, wifi, delivered) = cellsAndWiFi(service: service)
        #expect(wifi.carried == [[try servingCell]])
        wifi.carries = false
        try #require(wifi.combinedQueries).declined()
        clock.advance(by: .zero)
        #expect(wifi.carried.count == 2, "Wi-Fi is asked again")
        for _ in 0..<1000 { await Task.yield() }
        #expect(service.requests == 1, "then the cells are asked alone")
        #expect(delivered.fixes.map(\.provider) == [.cell])
        withExtendedLifetime(locator) {}
    }

    @Test func aStaticLocationSetAtRunTimeMakesTheProviderOnce() {
        let (locator, delivered) = locator([])
        locator.setDemand(.exact)
        #expect(locator.status.isEmpty && locator.availableLevel == .none)
        locator.setStaticLocation(nil)
        #expect(locator.status.isEmpty, "clearing makes nothing")

        locator.setStaticLocation(StaticLocation(latitude: 46.5, longitude: 7.25, altitude: 500, accuracy: 10))
        #expect(locator.status.map(\.kind) == ["static"] && locator.availableLevel == .exact)
        clock.advance(by: .seconds(1))
        locator.setStaticLocation(StaticLocation(latitude: 47.5, longitude: 8.5, altitude: 400, accuracy: 10))
        locator.setStaticLocation(nil)
        clock.advance(by: .seconds(1))
        locator.setStaticLocation(StaticLocation(latitude: 48.5, longitude: 9.5, altitude: 300, accuracy: 10))
        #expect(locator.status.map(\.kind) == ["static"], "one static provider serves every location set")
        #expect(delivered.fixes.map(\.latitude) == [46.5, 47.5, 48.5])
    }

    @Test func aConfiguredStaticProviderServesTheLocationSet() {
        let configured = StaticProvider(
            path: nil, clock: clock, timers: clock, watches: EventLoop.main, logger: SilentLogger())
        let (locator, delivered) = locator([configured])
        locator.setDemand(.exact)
        locator.setStaticLocation(StaticLocation(latitude: 46.5, longitude: 7.25, altitude: 500, accuracy: 10))
        #expect(locator.status.map(\.kind) == ["static"])
        #expect(delivered.fixes.map(\.latitude) == [46.5])
    }
}
