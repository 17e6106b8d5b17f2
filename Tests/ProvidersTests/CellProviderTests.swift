import Loop
import TestBasics
import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// What the provider saved, and what a Wi-Fi lookup was asked to carry.
@BusActor
private final class CellLog {
    /// The cache as last saved; it is also what a provider loads at its first start.
    var cache = CellAnswerCache()
    var saves = 0
    /// The cells each ``CombinedCellQueries/carry(_:)`` call asked Wi-Fi to carry.
    var carried: [[ServingCell]] = []
    /// Whether Wi-Fi can carry them.
    var wifiCarries = true
}

/// The service's answer placing the access points of a combined query, 40 m wide.
private let accessPointsPlaced = Result<HTTPResponse, HTTPFailure>.success(
    HTTPResponse(status: 200, body: Array(#"{"location": {"lat": 52.51, "lng": 13.41}, "accuracy": 40}"#.utf8)))

/// The cell provider on a manual clock with a fake modem service and a scripted web service: it asks only for a
/// cell it can look up, only while started, once per cell while the answer stands (kept across restarts), after a
/// failure again exactly when its backoff ends, and through Wi-Fi's lookup where that can carry the cells.
@Suite @BusActor struct CellProviderTests {
    static let lte = "262,01,0,8A1B2C3,5A1F"
    private let clock = ManualClock()
    private let service = ScriptedService()
    private let modems = FakeModems()
    private let log = CellLog()
    private let wifi = ScriptedCellCarrier()
    private let routes = ScriptedRouteSource()
    private let network: NetworkChanges

    init() {
        network = NetworkChanges(source: routes, timers: clock, logger: SilentLogger())
    }

    private func provider(logger: any Logger = SilentLogger()) -> (CellProvider, FixLog) {
        let log = self.log
        let provider = CellProvider(
            modems: modems, transport: service, url: "https://location.example/v1/geolocate",
            loadCache: { log.cache },
            saveCache: {
                log.cache = $0
                log.saves += 1
            }, network: network, clock: clock, timers: clock, logger: logger)
        let fixes = FixLog()
        provider.onFix = { fixes.fixes.append($0) }
        return (provider, fixes)
    }

    /// A provider whose Wi-Fi lookup carries the cells when `wifiCarries` (and later ``CellLog/wifiCarries``)
    /// says so.
    private func combinedProvider(wifiCarries: Bool) -> (CellProvider, FixLog) {
        let (provider, fixes) = provider()
        let log = self.log
        log.wifiCarries = wifiCarries
        wifi.carries = { cells in
            guard log.wifiCarries else { return false }
            log.carried.append(cells)
            return true
        }
        CombinedCellQueries.join(lookup: wifi, cells: provider)
        return (provider, fixes)
    }

    private func settle(requests count: Int) async throws {
        for _ in 0..<1000 { await Task.yield() }
        try #require(service.requests == count)
    }

    private var servingCell: ServingCell {
        get throws { try ServingCell(modemManagerLocation: Self.lte, accessTechnologies: .lte) }
    }

    @Test func aCellIsAskedOnceWhileItsAnswerStands() async throws {
        let (provider, fixes) = provider()
        service.willAnswer(position)
        service.willAnswer(position)
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        try await settle(requests: 0)
        provider.start()
        #expect(modems.needs[.cell] == .threeGPPCell)
        try await settle(requests: 1)
        #expect(fixes.fixes.count == 1 && fixes.fixes.first?.provider == .cell)
        #expect(log.saves == 1 && log.cache.count == 1)
        provider.stop()
        provider.start()
        try await settle(requests: 1)
        #expect(fixes.fixes.count == 2, "the known cell is served again at once")
        provider.stop()
        clock.advance(by: CellAnswerCache.maximumAge + .seconds(1))
        provider.start()
        try await settle(requests: 2)
        #expect(fixes.fixes.count == 3)
    }

    @Test func answersAreReadBackAtTheFirstStart() async throws {
        service.willAnswer(position)
        let (first, _) = provider()
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        first.start()
        try await settle(requests: 1)
        first.stop()
        let (second, fixes) = provider()
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        second.start()
        try await settle(requests: 1)
        #expect(fixes.fixes.map(\.latitude) == [52.5], "the saved answer serves a new daemon with no request")
    }

    @Test func withWiFiTheCellsGoInItsLookupAndACoarseAnswerIsTheirs() async throws {
        let (provider, fixes) = combinedProvider(wifiCarries: true)
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        provider.start()
        #expect(provider.cellsToCarry == [try servingCell])
        clock.advance(by: CellProvider.settleDelay - .milliseconds(1))
        #expect(log.carried.isEmpty, "a start waits for Wi-Fi's first lookup")
        clock.advance(by: .milliseconds(1))
        try await settle(requests: 0)
        #expect(log.carried == [[try servingCell]])
        provider.combinedQueryAnswered(position, for: [try servingCell])
        #expect(fixes.fixes.map(\.horizontalAccuracy) == [12000] && log.cache.count == 1)
        #expect(provider.cellsToCarry.isEmpty, "an answered cell is not sent again")
        try await settle(requests: 0)
    }

    @Test func anAnswerPlacingTheAccessPointsLeavesTheCellsToBeAskedAloneLater() async throws {
        let (provider, fixes) = combinedProvider(wifiCarries: true)
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        provider.start()
        clock.advance(by: CellProvider.settleDelay)
        #expect(log.carried.count == 1)
        provider.combinedQueryAnswered(accessPointsPlaced, for: [try servingCell])
        #expect(fixes.fixes.isEmpty && log.cache.count == 0, "a Wi-Fi position is not the cell's")
        clock.advance(by: CellProvider.askAloneAfter / 2)
        provider.combinedQueryAnswered(accessPointsPlaced, for: [try servingCell])
        service.willAnswer(position)
        clock.advance(by: CellProvider.askAloneAfter / 2 - .milliseconds(1))
        try await settle(requests: 0)
        clock.advance(by: .milliseconds(1))
        try await settle(requests: 1)
        #expect(log.carried.count == 1, "the hour counts from the first such answer, and then the cells go alone")
        #expect(fixes.fixes.map(\.horizontalAccuracy) == [12000])
    }

    @Test func cellsTheServiceDoesNotKnowAreNotAskedAgainForAnHour() async throws {
        let (provider, _) = combinedProvider(wifiCarries: true)
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        provider.start()
        clock.advance(by: CellProvider.settleDelay)
        provider.combinedQueryAnswered(.success(HTTPResponse(status: 404, body: [])), for: [try servingCell])
        #expect(provider.cellsToCarry.isEmpty)
        clock.advance(by: CellProvider.wifiWaitLimit)
        clock.advance(by: CellProvider.notFoundLifetime - CellProvider.wifiWaitLimit - .milliseconds(1))
        try await settle(requests: 0)
        #expect(log.carried.count == 1)
        clock.advance(by: .milliseconds(1))
        #expect(try log.carried.count == 2 && provider.cellsToCarry == [servingCell])
    }

    @Test func cellsTheServiceRefusesAreNotHandedToWiFiAgain() async throws {
        let (provider, _) = combinedProvider(wifiCarries: true)
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        provider.start()
        clock.advance(by: CellProvider.settleDelay)
        #expect(provider.cellsToCarry == [try servingCell])
        let refusal = Result<HTTPResponse, HTTPFailure>.success(HTTPResponse(status: 400, body: []))
        provider.combinedQueryAnswered(refusal, for: [try servingCell])
        #expect(provider.cellsToCarry.isEmpty && provider.unavailabilityReason == "service-refused")
    }

    @Test func aDeclinedPromiseAsksNothingWhenTheProviderStopsInTheSameTurn() async throws {
        let (provider, _) = combinedProvider(wifiCarries: true)
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        provider.start()
        clock.advance(by: CellProvider.settleDelay)
        #expect(log.carried.count == 1)
        log.wifiCarries = false
        provider.wifiDeclined()
        provider.stop()
        clock.advance(by: CellProvider.wifiWaitLimit)
        try await settle(requests: 0)
        log.wifiCarries = true
        provider.start()
        clock.advance(by: CellProvider.settleDelay)
        #expect(log.carried.count == 2)
        log.wifiCarries = false
        provider.wifiDeclined()
        try await settle(requests: 0)
        clock.advance(by: .zero)
        try await settle(requests: 1)
    }

    @Test func cellsThatChangedDuringALookupAreAskedWhateverItsAnswer() async throws {
        let (provider, _) = provider()
        service.willAnswer(.success(HTTPResponse(status: 404, body: [])))
        service.willAnswer(position)
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        provider.start()
        modems.send(.location(.servingCell("262,01,2B3C,1234567,0", .umts, modem: "/m/0")))
        clock.advance(by: CellProvider.settleDelay)
        try await settle(requests: 2)
    }

    @Test func whenWiFiCannotCarryThemTheCellsGoAlone() async throws {
        let (provider, fixes) = combinedProvider(wifiCarries: false)
        service.willAnswer(position)
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        provider.start()
        clock.advance(by: CellProvider.settleDelay)
        try await settle(requests: 1)
        #expect(fixes.fixes.count == 1 && log.carried.isEmpty)
        #expect(provider.cellsToCarry.isEmpty)
    }

    @Test func aCoarseAnswerToAWiFiLookupOfItsOwnIsKeptToo() async throws {
        let (provider, fixes) = combinedProvider(wifiCarries: false)
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        provider.start()
        provider.combinedQueryAnswered(position, for: [try servingCell])
        #expect(fixes.fixes.count == 1 && log.cache.count == 1)
        provider.combinedQueryAnswered(.failure(.unreachable("down")), for: [try servingCell])
        #expect(provider.availableLevel == .neighborhood, "a failure of a lookup it did not ask for is Wi-Fi's")
        clock.advance(by: CellProvider.settleDelay)
        try await settle(requests: 0)
    }

    @Test func aChangedCellIsAskedOnceItHasHeldStill() async throws {
        let (provider, fixes) = provider()
        service.willAnswer(position)
        service.willAnswer(position)
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        provider.start()
        try await settle(requests: 1)
        // A handover to UMTS, reported as the new cell under the old radio, then the new radio.
        modems.send(.location(.servingCell("262,01,2B3C,1234567,0", .lte, modem: "/m/0")))
        clock.advance(by: CellProvider.settleDelay / 2)
        modems.send(.location(.servingCell("262,01,2B3C,1234567,0", .umts, modem: "/m/0")))
        clock.advance(by: CellProvider.settleDelay - .milliseconds(1))
        try await settle(requests: 1)
        clock.advance(by: .milliseconds(1))
        try await settle(requests: 2)
        #expect(fixes.fixes.count == 2)
    }

    @Test func aFailureIsTriedAgainWhenItsBackoffEnds() async throws {
        let (provider, fixes) = provider()
        service.willAnswer(.failure(.unreachable("down")))
        service.willAnswer(position)
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        provider.start()
        try await settle(requests: 1)
        #expect(provider.availableLevel == .none && provider.unavailabilityReason == "service-unreachable")
        clock.advance(by: LookupBackoff.firstDelay - .milliseconds(1))
        try await settle(requests: 1)
        clock.advance(by: .milliseconds(1))
        try await settle(requests: 2)
        #expect(provider.availableLevel == .neighborhood && fixes.fixes.count == 1)
    }

    @Test func joiningANetworkEndsTheBackoff() async throws {
        let (provider, fixes) = provider()
        service.willAnswer(.failure(.unreachable("down")))
        service.willAnswer(position)
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        provider.start()
        routes.dump([Routes.home])
        try await settle(requests: 1)
        routes.moveFromHomeToWork(on: clock)
        #expect(clock.monotonicNow < MonotonicTime(nanoseconds: 0) + LookupBackoff.firstDelay)
        try await settle(requests: 2)
        #expect(fixes.fixes.count == 1 && provider.availableLevel == .neighborhood)
    }

    @Test func aCellNoLongerFollowedIsNeitherServedNorSent() async throws {
        let (provider, fixes) = provider()
        service.willAnswer(position)
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        provider.start()
        try await settle(requests: 1)
        provider.stop()
        modems.send(.locationGone(.threeGPPCell, modem: "/m/0"))
        provider.start()
        try await settle(requests: 1)
        #expect(fixes.fixes.count == 1, "the answer of a cell no longer followed was served again")
        #expect(provider.cellsToCarry.isEmpty && provider.details["cell /m/0"] == nil)
        modems.send(.locationGone(.gpsNMEA, modem: "/m/0"))
        modems.send(.location(.servingCell(Self.lte, .lte, modem: "/m/0")))
        clock.advance(by: CellProvider.settleDelay)
        #expect(fixes.fixes.count == 2, "the cell reported again is served from its answer")
    }

    @Test func aReportWithNoCellIsLoggedOnceAndNeverSent() async throws {
        let logs = LogLines()
        let (provider, _) = provider(logger: logs)
        provider.start()
        for text in ["001,01,1A2B,3C4D,0", "001,01,1A2B,3C4D,0", "garbage", "262,01,FFFE,3C4D,0"] {
            modems.send(.location(.servingCell(text, .gsm, modem: "/m/0")))
        }
        modems.send(.location(.servingCell(Self.lte, [], modem: "/m/1")))
        try await settle(requests: 0)
        #expect(logs.lines.filter { $0.contains("no cell to look up") }.count == 4, "\(logs.lines)")
    }

    @Test func availabilityIsTheModemsAndTheServices() {
        let (provider, _) = provider()
        #expect(provider.availableLevel == .neighborhood)
        modems.reasons[.threeGPPCell] = "modem-locked"
        #expect(provider.availableLevel == .none && provider.unavailabilityReason == "modem-locked")
        #expect(provider.kind == .cell && provider.minimumClientLevel == .neighborhood)
    }
}
