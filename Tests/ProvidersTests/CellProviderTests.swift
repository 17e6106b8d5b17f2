import Loop
import TestSupport
import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// The cell provider on a manual clock with a fake modem service and a scripted web service: it asks only for a
/// cell it can look up, only while started, once per cell while the answer stands, and after a failure again
/// exactly when its backoff ends.
@Suite @BusActor struct CellProviderTests {
    static let lte = "262,01,0,8A1B2C3,5A1F"
    private let clock = ManualClock()
    private let service = ScriptedService()
    private let modems = FakeModems()

    private func provider(logger: any Logger = SilentLogger()) -> (CellProvider, FixLog) {
        let provider = CellProvider(
            modems: modems, transport: service, url: "https://location.example/v1/geolocate", clock: clock,
            timers: clock, logger: logger)
        let fixes = FixLog()
        provider.onFix = { fixes.fixes.append($0) }
        return (provider, fixes)
    }

    private func settle(requests count: Int) async throws {
        for _ in 0..<1000 { await Task.yield() }
        try #require(service.requests == count)
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
        provider.stop()
        provider.start()
        try await settle(requests: 1)
        #expect(fixes.fixes.count == 2, "the known cell is served again at once")
        clock.advance(by: CellProvider.answerLifetime)
        try await settle(requests: 2)
        #expect(fixes.fixes.count == 3)
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
