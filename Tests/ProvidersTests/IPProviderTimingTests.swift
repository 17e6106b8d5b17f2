import Loop
import Synchronization
import TestBasics
import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// The IP provider's timers on a manual clock: it asks again exactly when its answer has stood its time, after a
/// failure exactly when its backoff ends, and at once when the machine joins another network.
@Suite @BusActor struct IPProviderTimingTests {
    private let clock = ManualClock()
    private let service = ScriptedService()
    private let routes = ScriptedRouteSource()
    private let network: NetworkChanges

    init() {
        network = NetworkChanges(source: routes, timers: clock, logger: SilentLogger())
    }

    private func provider() -> (IPProvider, FixLog) {
        let provider = IPProvider(
            transport: service, url: "https://location.example/v1/geolocate", accuracy: nil, network: network,
            clock: clock,
            timers: clock, logger: SilentLogger())
        let fixes = FixLog()
        provider.onFix = { fixes.fixes.append($0) }
        return (provider, fixes)
    }

    /// Lets the lookups the provider started run (each is a task of its own, answered at once), then checks that
    /// the service has had `count` requests in all.
    private func settle(_ fixes: FixLog, requests count: Int) async throws {
        for _ in 0..<1000 { await Task.yield() }
        try #require(service.requests == count)
    }

    @Test func anAnswerStandsForItsRefreshIntervalThenIsAskedAgain() async throws {
        let (provider, fixes) = provider()
        service.willAnswer(position)
        service.willAnswer(position)
        provider.start()
        try await settle(fixes, requests: 1)
        #expect(fixes.fixes.count == 1)
        clock.advance(by: IPProvider.refreshInterval - .seconds(1))
        try await settle(fixes, requests: 1)
        clock.advance(by: .seconds(1))
        try await settle(fixes, requests: 2)
        #expect(fixes.fixes.count == 2)
        provider.stop()
        clock.advance(by: IPProvider.refreshInterval * 2)
        try await settle(fixes, requests: 2)
    }

    @Test func aFailureIsTriedAgainWhenItsBackoffEnds() async throws {
        let (provider, fixes) = provider()
        service.willAnswer(.failure(.unreachable("down")))
        service.willAnswer(position)
        provider.start()
        try await settle(fixes, requests: 1)
        #expect(provider.availableLevel == .none && provider.unavailabilityReason == "service-unreachable")
        clock.advance(by: LookupBackoff.firstDelay - .milliseconds(1))
        try await settle(fixes, requests: 1)
        clock.advance(by: .milliseconds(1))
        try await settle(fixes, requests: 2)
        #expect(provider.availableLevel == .city && fixes.fixes.count == 1)
    }

    @Test func joiningAnotherNetworkAsksAgainAtOnce() async throws {
        let (provider, fixes) = provider()
        service.willAnswer(position)
        service.willAnswer(elsewhere)
        provider.start()
        routes.dump([Routes.home])
        try await settle(fixes, requests: 1)
        routes.moveFromHomeToWork(on: clock)
        try await settle(fixes, requests: 2)
        #expect(fixes.fixes.map(\.latitude) == [52.5, 48.1])
    }

    /// While traffic to the Internet goes through a VPN (wg-quick's own table: the main table's default route does
    /// not change, a rule does), no lookup is made, the answer is dropped and the reason is `vpn`; when it leaves the
    /// tunnel the provider asks at once. `through-vpn=true` asks all the same.
    @Test(arguments: [false, true])
    func aVPNHoldsLookupsBackUnlessAllowed(throughVPN: Bool) async throws {
        let provider = IPProvider(
            transport: service, url: "https://location.example/v1/geolocate", accuracy: nil, network: network,
            asksThroughTunnels: throughVPN, clock: clock, timers: clock, logger: SilentLogger())
        let fixes = FixLog()
        provider.onFix = { fixes.fixes.append($0) }
        service.willAnswer(position)
        service.willAnswer(position)
        provider.start()
        routes.dump([Routes.home])
        let ethernet = InterfaceLink(index: Routes.home.interfaceIndex, type: 1, kind: nil)
        routes.pathsGo(through: ethernet)
        #expect(network.throughTunnel == false)
        try await settle(fixes, requests: 1)
        // wg-quick up: a rule and a table of its own; the kernel announces the rule, the table is read again.
        routes.kernelSays([.otherChange])
        clock.advance(by: NetworkChanges.settleDelay)
        routes.dump([Routes.home])
        routes.pathsGo(through: InterfaceLink(index: 9, type: 65534, kind: "wireguard"))
        #expect(network.throughTunnel == true && network.generation == 0)
        #expect(provider.availableLevel == (throughVPN ? .city : .none))
        #expect(provider.unavailabilityReason == (throughVPN ? nil : "vpn"))
        clock.advance(by: IPProvider.refreshInterval)
        try await settle(fixes, requests: throughVPN ? 2 : 1)
        // wg-quick down.
        routes.kernelSays([.otherChange])
        clock.advance(by: NetworkChanges.settleDelay)
        routes.dump([Routes.home])
        routes.pathsGo(through: ethernet)
        #expect(network.throughTunnel == false && provider.availableLevel == .city)
        try await settle(fixes, requests: 2)
        #expect(routes.linksRequested.contains(9))
        provider.stop()
    }

    @Test func joiningANetworkEndsTheBackoff() async throws {
        let (provider, fixes) = provider()
        service.willAnswer(.failure(.unreachable("down")))
        service.willAnswer(position)
        provider.start()
        routes.dump([Routes.home])
        try await settle(fixes, requests: 1)
        #expect(provider.availableLevel == .none)
        routes.moveFromHomeToWork(on: clock)
        #expect(clock.monotonicNow < MonotonicTime(nanoseconds: 0) + LookupBackoff.firstDelay)
        try await settle(fixes, requests: 2)
        #expect(provider.availableLevel == .city && fixes.fixes.count == 1)
    }

    @Test func anAnswerForTheNetworkLeftIsNotShown() async throws {
        let (provider, fixes) = provider()
        service.willAnswer(position)
        service.willAnswer(elsewhere)
        provider.start()
        routes.dump([Routes.home])
        // The move comes before the first lookup's answer is taken in.
        routes.moveFromHomeToWork(on: clock)
        try await settle(fixes, requests: 2)
        #expect(fixes.fixes.map(\.latitude) == [48.1])
    }

    @Test func aNetworkJoinedWhileStoppedMakesTheAnswerStale() async throws {
        let (provider, fixes) = provider()
        service.willAnswer(position)
        service.willAnswer(elsewhere)
        provider.start()
        routes.dump([Routes.home])
        try await settle(fixes, requests: 1)
        provider.stop()
        routes.moveFromHomeToWork(on: clock)
        try await settle(fixes, requests: 1)
        provider.start()
        try await settle(fixes, requests: 2)
        #expect(fixes.fixes.map(\.latitude) == [52.5, 48.1])
    }

    @Test func goingOfflineAsksNothing() async throws {
        let (provider, fixes) = provider()
        service.willAnswer(position)
        provider.start()
        routes.dump([Routes.home])
        try await settle(fixes, requests: 1)
        routes.kernelSays([.removed(Routes.home)])
        clock.advance(by: NetworkChanges.settleDelay)
        routes.dump([])
        #expect(network.isOnline == false)
        try await settle(fixes, requests: 1)
    }
}

/// Ichnaea's answer for a position in Munich.
private let elsewhere = Result<HTTPResponse, HTTPFailure>.success(
    HTTPResponse(status: 200, body: Array(#"{"location": {"lat": 48.1, "lng": 11.6}, "accuracy": 12000}"#.utf8)))
