import Loop
import Synchronization
import WhereaboutsCore
import WhereaboutsProviders

/// A web service whose answers the test gives one at a time, counting the requests.
final class ScriptedService: HTTPTransport {
    private let state = Mutex<(answers: [Result<HTTPResponse, HTTPFailure>], requests: Int)>(([], 0))

    /// Answers the next request with `answer`.
    func willAnswer(_ answer: Result<HTTPResponse, HTTPFailure>) { state.withLock { $0.answers.append(answer) } }

    var requests: Int { state.withLock { $0.requests } }

    func post(_ request: HTTPRequest) async -> Result<HTTPResponse, HTTPFailure> {
        state.withLock { state in
            state.requests += 1
            return state.answers.isEmpty ? .failure(.unreachable("no answer scripted")) : state.answers.removeFirst()
        }
    }
}

/// Ichnaea's answer for a position in Berlin, 12 km wide.
let position = Result<HTTPResponse, HTTPFailure>.success(
    HTTPResponse(status: 200, body: Array(#"{"location": {"lat": 52.5, "lng": 13.4}, "accuracy": 12000}"#.utf8)))

/// The fixes a provider offered.
@BusActor
final class FixLog {
    var fixes: [Fix] = []
}

/// The routing socket as a test drives it: what the daemon's reads would get, given by the test.
@BusActor
final class ScriptedRouteSource: RouteSource {
    private var onEvents: (@BusActor ([RouteEvent]) -> Void)?
    /// Why opening fails, when it should.
    var openingFailure: String?
    /// How many dumps were asked for.
    private(set) var dumpsRequested = 0
    /// True once opened.
    var isOpen: Bool { onEvents != nil }

    func open(_ onEvents: @escaping @BusActor ([RouteEvent]) -> Void) -> String? {
        if let openingFailure { return openingFailure }
        self.onEvents = onEvents
        return nil
    }

    func requestDump() { dumpsRequested += 1 }

    /// The families whose path to the Internet was asked for, and the interfaces asked about, in order.
    private(set) var pathsRequested: [UInt8] = []
    private(set) var linksRequested: [UInt32] = []

    func requestPath(family: UInt8) { pathsRequested.append(family) }

    func requestLink(index: UInt32) { linksRequested.append(index) }

    /// Answers the path lookups: IPv4 and IPv6 traffic leave through `interface` (nil: no route), which is `link`.
    func pathsGo(through link: InterfaceLink?) {
        kernelSays([
            .path(family: RouteMessages.inet, interfaceIndex: link?.index),
            .path(family: RouteMessages.inet6, interfaceIndex: link?.index),
        ])
        if let link { kernelSays([.link(link)]) }
    }

    /// Delivers `events` as one datagram.
    func kernelSays(_ events: [RouteEvent]) { onEvents?(events) }

    /// Answers the dump asked for with `routes`.
    func dump(_ routes: [DefaultRoute]) { kernelSays(routes.map(RouteEvent.dumped) + [.dumpEnded]) }
}

extension ScriptedRouteSource {
    /// Moves the machine from the network of `Routes.home` to that of `Routes.work`, as the kernel would say it,
    /// the settle delay passing on `clock`.
    func moveFromHomeToWork(on clock: ManualClock) {
        kernelSays([.removed(Routes.home), .added(Routes.work)])
        clock.advance(by: NetworkChanges.settleDelay)
        dump([Routes.work])
    }
}

/// Default routes for the tests: the ways out of two networks.
enum Routes {
    static let home = DefaultRoute(family: RouteMessages.inet, interfaceIndex: 2, gateway: [192, 0, 2, 1], metric: 600)
    static let work = DefaultRoute(
        family: RouteMessages.inet, interfaceIndex: 2, gateway: [198, 51, 100, 1], metric: 600)
}

/// Wi-Fi's side of the combined queries as a test drives it: whether it carries the cells is the test's answer.
@BusActor
final class ScriptedCellCarrier: CellCarryingLookup {
    var combinedQueries: CombinedCellQueries?
    /// Answers each ``carryCells(_:)``.
    var carries: @BusActor ([ServingCell]) -> Bool = { _ in false }

    func carryCells(_ cells: [ServingCell]) -> Bool { carries(cells) }
}

/// The cell side of the combined queries as a test drives it: the cells it gives and what it is told.
@BusActor
final class ScriptedCarriedCells: CarriedCells {
    var combinedQueries: CombinedCellQueries?
    /// Gives ``cellsToCarry``.
    var toCarry: @BusActor () -> [ServingCell] = { [] }
    /// Told each answer to a lookup that carried cells.
    var onAnswered: @BusActor (Result<HTTPResponse, HTTPFailure>, [ServingCell]) -> Void = { _, _ in }
    /// Told each lookup promised and not sent.
    var onDeclined: @BusActor () -> Void = {}

    var cellsToCarry: [ServingCell] { toCarry() }

    func combinedQueryAnswered(_ result: Result<HTTPResponse, HTTPFailure>, for asked: [ServingCell]) {
        onAnswered(result, asked)
    }

    func wifiDeclined() { onDeclined() }
}
