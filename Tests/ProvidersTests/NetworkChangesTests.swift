import Loop
import Synchronization
import TestBasics
import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// When ``NetworkChanges`` reads the routing table and whom it tells, on a manual clock with the kernel's side
/// scripted.
@Suite @BusActor struct NetworkChangesTests {
    private let clock = ManualClock()
    private let routes = ScriptedRouteSource()
    private let logs = LogLines()
    private let network: NetworkChanges
    private let told = Told()

    init() {
        network = NetworkChanges(source: routes, timers: clock, logger: logs)
        network.observe { [told] in told.changes.append($0) }
    }

    @Test func theFirstReadIsTheBaselineAndTellsNoOne() {
        #expect(!routes.isOpen && network.isOnline == nil)
        network.follow()
        network.follow()
        #expect(routes.isOpen && routes.dumpsRequested == 1)
        routes.dump([Routes.home])
        #expect(network.isOnline == true && network.generation == 0 && told.changes.isEmpty)
        #expect(logs.lines.contains { $0.contains("network: online, default routes: IPv4 via 192.0.2.1") })
    }

    @Test func aDumpsOwnRoutesAreNotChangesThatReadItAgain() {
        network.follow()
        routes.dump([Routes.home, Routes.work])
        clock.advance(by: NetworkChanges.settleDelay * 3)
        #expect(routes.dumpsRequested == 1 && clock.armedTimers == 0)
        // Another route or a routing rule announced: read again, and the path to the Internet asked again.
        routes.kernelSays([.otherChange])
        clock.advance(by: NetworkChanges.settleDelay)
        #expect(routes.dumpsRequested == 2)
        routes.dump([Routes.home])
        #expect(
            routes.pathsRequested == [RouteMessages.inet, RouteMessages.inet6, RouteMessages.inet, RouteMessages.inet6])
    }

    @Test func eitherPathThroughATunnelIsTold() {
        var tunnel: [Bool] = []
        network.observeTunnel { tunnel.append($0) }
        network.follow()
        routes.dump([Routes.home])
        routes.pathsGo(through: InterfaceLink(index: 2, type: 1, kind: nil))
        #expect(network.throughTunnel == false && tunnel.isEmpty)
        routes.kernelSays([.otherChange])
        clock.advance(by: NetworkChanges.settleDelay)
        routes.dump([Routes.home])
        // IPv4 still leaves by the Ethernet, IPv6 through WireGuard.
        routes.kernelSays([
            .path(family: RouteMessages.inet, interfaceIndex: 2), .path(family: RouteMessages.inet6, interfaceIndex: 9),
        ])
        routes.kernelSays([.link(InterfaceLink(index: 2, type: 1, kind: nil))])
        #expect(network.throughTunnel == false, "not known until both interfaces are")
        routes.kernelSays([.link(InterfaceLink(index: 9, type: 65534, kind: "wireguard"))])
        #expect(network.throughTunnel == true && tunnel == [true])
        #expect(logs.lines.contains { $0.contains("goes through a tunnel (interface 9, wireguard") })
    }

    @Test func aBurstOfAnnouncementsIsReadOnceAfterTheSettleDelay() {
        network.follow()
        routes.dump([Routes.home])
        routes.kernelSays([.removed(Routes.home)])
        clock.advance(by: .seconds(1))
        routes.kernelSays([.added(Routes.work)])
        clock.advance(by: NetworkChanges.settleDelay - .seconds(1) - .milliseconds(1))
        #expect(routes.dumpsRequested == 1)
        clock.advance(by: .milliseconds(1))
        #expect(routes.dumpsRequested == 2)
        routes.dump([Routes.work])
        #expect(told.changes == [true] && network.generation == 1)
        #expect(logs.lines.contains { $0.contains("network changed: online, default routes: IPv4 via 198.51.100.1") })
    }

    @Test func theSameRoutesReadAgainTellNoOne() {
        network.follow()
        routes.dump([Routes.home])
        routes.kernelSays([.removed(Routes.home), .added(Routes.home)])
        clock.advance(by: NetworkChanges.settleDelay)
        routes.dump([Routes.home])
        #expect(told.changes.isEmpty && network.generation == 0)
    }

    @Test func goingOfflineAndBackIsTwoChanges() {
        network.follow()
        routes.dump([Routes.home])
        routes.kernelSays([.removed(Routes.home)])
        clock.advance(by: NetworkChanges.settleDelay)
        routes.dump([])
        #expect(network.isOnline == false)
        routes.kernelSays([.added(Routes.home)])
        clock.advance(by: NetworkChanges.settleDelay)
        routes.dump([Routes.home])
        #expect(told.changes == [false, true] && network.generation == 2)
    }

    @Test func aChangeDuringAReadIsReadAgain() {
        network.follow()
        routes.dump([Routes.home])
        routes.kernelSays([.added(Routes.work)])
        clock.advance(by: NetworkChanges.settleDelay)
        #expect(routes.dumpsRequested == 2)
        // The dump is under way when another change is announced.
        routes.kernelSays([.added(Routes.home), .removed(Routes.home)])
        routes.kernelSays([.added(Routes.work), .dumpEnded])
        #expect(told.changes == [true])
        clock.advance(by: NetworkChanges.settleDelay)
        #expect(routes.dumpsRequested == 3)
    }

    @Test func lostAnnouncementsAreMadeUpByAReadAndAnAnnouncementBeforeTheBaselineWaitsForIt() {
        network.follow()
        routes.kernelSays([.overrun])
        #expect(routes.dumpsRequested == 1 && clock.armedTimers == 0)
        routes.dump([Routes.home])
        #expect(clock.armedTimers == 1)
        clock.advance(by: NetworkChanges.settleDelay)
        #expect(routes.dumpsRequested == 2)
        routes.dump([Routes.home])
        routes.kernelSays([.overrun])
        clock.advance(by: NetworkChanges.settleDelay)
        #expect(routes.dumpsRequested == 3 && told.changes.isEmpty)
    }

    @Test func aRefusedReadKeepsTheBaselineAndTheNextAnnouncementReadsAgain() {
        network.follow()
        routes.dump([Routes.home])
        routes.kernelSays([.added(Routes.work)])
        clock.advance(by: NetworkChanges.settleDelay)
        routes.kernelSays([.refused(code: -16)])
        #expect(network.isOnline == true && told.changes.isEmpty)
        #expect(logs.lines.contains { $0.contains("refused to list the routes (error 16)") })
        routes.kernelSays([.added(Routes.work)])
        clock.advance(by: NetworkChanges.settleDelay)
        #expect(routes.dumpsRequested == 3)
    }

    @Test func aSocketThatCannotBeOpenedIsLoggedAndNothingIsRead() {
        routes.openingFailure = "socket: Address family not supported by protocol"
        network.follow()
        #expect(routes.dumpsRequested == 0 && network.isOnline == nil)
        #expect(logs.lines.contains { $0.contains("network changes are not followed (socket: Address family") })
    }
}

/// What the observers were told, in order.
@BusActor
private final class Told {
    var changes: [Bool] = []
}
