import Loop
import LoopScheduling
import WhereaboutsCore

/// The kernel's routing socket, or a stand-in for it: what ``NetworkChanges`` reads the default routes from.
@BusActor
public protocol RouteSource: AnyObject {
    /// Opens the socket, subscribed to route announcements, and calls `onEvents` on the bus thread with what each
    /// datagram says, from now on. Returns why it cannot, or nil.
    func open(_ onEvents: @escaping @BusActor ([RouteEvent]) -> Void) -> String?
    /// Asks the kernel for every route; the answer comes through `onEvents` and ends with
    /// ``RouteEvent/dumpEnded``.
    func requestDump()
    /// Asks the kernel which interface traffic of `family` to the Internet leaves through; the answer comes through
    /// `onEvents` as ``RouteEvent/path(family:interfaceIndex:)``.
    func requestPath(family: UInt8)
    /// Asks the kernel what interface `index` is; the answer comes through `onEvents` as ``RouteEvent/link(_:)``.
    func requestLink(index: UInt32)
}

/// The network the machine is on, as its default routes say, and who to tell when it changes: the network
/// providers, which ask again at once when the machine joins a network rather than waiting out a backoff or an
/// answer's refresh interval (an IP address's position is the network's, and a laptop carried from home to work
/// keeps neither).
///
/// **The rule.** The default routes of the main table are read from the kernel (a dump). An announcement of any
/// route change starts ``settleDelay``, after which the table is read again, so that the burst of changes a
/// network's arrival makes (an address, its routes, their metrics) counts once, and a route replaced in place is
/// read as the kernel now holds it. The delay is not restarted by further announcements, so that a flapping link
/// cannot hold the read off; changes announced during a read start another. When the table read differs from the one before, ``generation`` grows and the
/// observers are told whether the machine is online (has a default route). The first read is the baseline and
/// tells no one.
///
/// **Tunnels.** With each read it also asks the kernel which interfaces IPv4 and IPv6 traffic to the Internet
/// leave through and what they are (``InterfaceLink``): while either is a tunnel (a VPN), ``throughTunnel`` is
/// true, and the tunnel observers are told when that changes. Announcements of other routes and of routing rules
/// start a read too, so a VPN that routes through a table of its own is seen when it comes and goes.
///
/// It follows the routes from the first ``follow()`` (a network provider's first start) until the daemon exits, so
/// that a network joined while no client needed positioning still makes an answer from the one before stale. Where
/// the routing socket cannot be opened it logs why once, and the providers retry by their backoff alone.
@BusActor
public final class NetworkChanges {
    /// How long after a route change is announced the table is read again.
    public static let settleDelay: Duration = .seconds(2)

    private let source: any RouteSource
    private let timers: any TimerScheduler
    private let logger: any Logger
    private var table = DefaultRouteTable()
    private var baseline: Set<DefaultRoute>?
    private var following = false
    private var settling: ScheduledTimer?
    private var changedDuringDump = false
    private var observers: [@BusActor (_ isOnline: Bool) -> Void] = []
    private var tunnelObservers: [@BusActor (_ throughTunnel: Bool) -> Void] = []
    /// The interface each family's traffic to the Internet leaves through (nil: no route), once answered.
    private var paths: [UInt8: UInt32?] = [:]
    /// Whether each interface on a path is a tunnel, once answered.
    private var tunnels: [UInt32: InterfaceLink] = [:]

    /// Whether traffic to the Internet goes through a tunnel (a VPN) now; nil until first known.
    public private(set) var throughTunnel: Bool?

    /// How many changes of network have been seen since following began; an answer given under another
    /// generation belongs to another network.
    public private(set) var generation: UInt64 = 0

    /// Changes read from `source`, settled on `timers`.
    public init(source: any RouteSource, timers: any TimerScheduler, logger: any Logger) {
        self.source = source
        self.timers = timers
        self.logger = logger
    }

    /// True while a default route exists, false while none does, nil until the table has been read.
    public var isOnline: Bool? { baseline.map { !$0.isEmpty } }

    /// Calls `observer` after each change of network, with whether the machine is online.
    public func observe(_ observer: @escaping @BusActor (_ isOnline: Bool) -> Void) { observers.append(observer) }

    /// Calls `observer` each time traffic to the Internet starts or stops going through a tunnel, and when it is
    /// first found to go through one.
    public func observeTunnel(_ observer: @escaping @BusActor (_ throughTunnel: Bool) -> Void) {
        tunnelObservers.append(observer)
    }

    /// Starts following the routes, once; later calls do nothing.
    public func follow() {
        guard !following else { return }
        following = true
        if let reason = source.open({ [weak self] in self?.received($0) }) {
            logger.notice("network changes are not followed (\(reason)); failed lookups wait out their backoff")
            return
        }
        readTable()
    }

    private func readTable() {
        table.beginDump()
        changedDuringDump = false
        source.requestDump()
    }

    private func received(_ events: [RouteEvent]) {
        for event in events {
            switch event {
            case .dumpEnded:
                table.apply(event)
                tableRead()
            case .refused(let code):
                logger.warning("network: the kernel refused to list the routes (error \(-code))")
                table.apply(.dumpEnded)
            case .added, .removed, .overrun:
                if table.isSettled {
                    settleThenRead()
                } else {
                    table.apply(event)
                    changedDuringDump = true
                }
            case .dumped:
                table.apply(event)
            case .otherChange:
                if table.isSettled { settleThenRead() } else { changedDuringDump = true }
            case .path(let family, let index):
                paths[family] = .some(index)
                if let index { source.requestLink(index: index) }
                pathAnswered()
            case .link(let link):
                tunnels[link.index] = link
                pathAnswered()
            }
        }
    }

    private func settleThenRead() {
        guard settling == nil else { return }
        settling = timers.scheduleOnBus(after: Self.settleDelay) { [weak self] in
            guard let self else { return }
            self.settling = nil
            self.readTable()
        }
    }

    private func tableRead() {
        paths = [:]
        tunnels = [:]
        source.requestPath(family: RouteMessages.inet)
        source.requestPath(family: RouteMessages.inet6)
        let routes = table.routes
        if changedDuringDump { settleThenRead() }
        guard let before = baseline else {
            baseline = routes
            logger.info("network: \(describe(routes))")
            return
        }
        guard routes != before else { return }
        baseline = routes
        generation += 1
        logger.notice("network changed: \(describe(routes))")
        for observer in observers { observer(!routes.isEmpty) }
    }

    /// Once both paths and their interfaces are known: whether either goes through a tunnel, told when it changed.
    private func pathAnswered() {
        guard paths.count == 2 else { return }
        let interfaces = paths.values.compactMap { $0 }
        guard interfaces.allSatisfy({ tunnels[$0] != nil }) else { return }
        let tunnel = interfaces.compactMap { tunnels[$0] }.first { $0.isTunnel }
        let through = tunnel != nil
        guard through != throughTunnel else { return }
        let before = throughTunnel
        throughTunnel = through
        if let tunnel {
            logger.notice(
                "network: traffic to the Internet goes through a tunnel (interface \(tunnel.index)"
                    + "\(tunnel.kind.map { ", \($0)" } ?? ""), type \(tunnel.type))")
        } else if before != nil {
            logger.notice("network: traffic to the Internet no longer goes through a tunnel")
        }
        guard before != nil || through else { return }
        for observer in tunnelObservers { observer(through) }
    }

    private func describe(_ routes: Set<DefaultRoute>) -> String {
        routes.isEmpty
            ? "offline (no default route)"
            : "online, default routes: " + routes.map(\.description).sorted().joined(separator: "; ")
    }
}
