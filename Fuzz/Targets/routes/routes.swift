import FuzzSupport
import WhereaboutsCore

/// The routing socket's datagrams: any bytes give events without a crash, each default route is of a known family
/// with a gateway of its family's length or none, each path answer of a known family, and the events of a datagram cut short are never more than the
/// whole's (a message is read only when all of it is there).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRoutes(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let events = RouteMessages.events(in: bytes)
    var table = DefaultRouteTable()
    for event in events {
        switch event {
        case .added(let route), .removed(let route), .dumped(let route):
            precondition(route.family == RouteMessages.inet || route.family == RouteMessages.inet6, "family")
            precondition(
                route.gateway.isEmpty || route.gateway.count == (route.family == RouteMessages.inet ? 4 : 16),
                "a gateway of \(route.gateway.count) bytes for family \(route.family)")
            _ = route.description
        case .refused(let code): precondition(code != 0, "an acknowledgement reported as a refusal")
        case .dumpEnded, .otherChange: break
        case .path(let family, _):
            precondition(family == RouteMessages.inet || family == RouteMessages.inet6, "a path of family \(family)")
        case .link(let link): _ = link.isTunnel
        case .overrun: preconditionFailure("an overrun read from bytes")
        }
        table.apply(event)
    }
    if !bytes.isEmpty {
        precondition(RouteMessages.events(in: Array(bytes.dropLast())).count <= events.count, "a cut gave more")
    }
    return 0
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzRoutes) }
    }
#endif
