/// A default route of the kernel's main routing table: the way out of the machine to the rest of the network.
///
/// The set of these is what network positioning takes for "the network the machine is on": it is empty while the
/// machine is offline, and changes when the machine joins another network (another interface, another gateway).
/// Addresses and other routes change more often (IPv6 lifetimes are renewed at every router advertisement) and say
/// nothing about where the machine is, so they are not followed.
public struct DefaultRoute: Sendable, Hashable, CustomStringConvertible {
    /// The address family: ``RouteMessages/inet`` or ``RouteMessages/inet6``.
    public var family: UInt8
    /// The outgoing interface's index; 0 when the message named none.
    public var interfaceIndex: UInt32
    /// The gateway's address (4 or 16 bytes); empty for a route with no gateway (a point-to-point link).
    public var gateway: [UInt8]
    /// The route's priority (its metric); 0 when the message named none.
    public var metric: UInt32

    /// A route out through interface `interfaceIndex`, by `gateway`.
    public init(family: UInt8, interfaceIndex: UInt32, gateway: [UInt8], metric: UInt32) {
        self.family = family
        self.interfaceIndex = interfaceIndex
        self.gateway = gateway
        self.metric = metric
    }

    public var description: String {
        let via: String
        switch (family, gateway.count) {
        case (RouteMessages.inet, 4): via = gateway.map(String.init).joined(separator: ".")
        case (RouteMessages.inet6, 16):
            via = stride(from: 0, to: 16, by: 2).map {
                String(UInt16(gateway[$0]) << 8 | UInt16(gateway[$0 + 1]), radix: 16)
            }
            .joined(separator: ":")
        default: via = "no gateway"
        }
        return "\(family == RouteMessages.inet6 ? "IPv6" : "IPv4") via \(via) on interface \(interfaceIndex)"
    }
}

/// What one message of the kernel's routing socket (rtnetlink, `NETLINK_ROUTE`) says about default routes and the
/// path to the Internet.
public enum RouteEvent: Sendable, Equatable {
    /// `RTM_NEWROUTE` for a default route, announced: it exists (or changed; a route is known by all its fields).
    case added(DefaultRoute)
    /// `RTM_NEWROUTE` for a default route in the answer to a dump: it is in the table read.
    case dumped(DefaultRoute)
    /// `RTM_DELROUTE` for a default route: it is gone.
    case removed(DefaultRoute)
    /// `NLMSG_DONE`: the dump of the routing table asked for has ended.
    case dumpEnded
    /// `NLMSG_ERROR` with an error: the kernel refused the request (the code is a negated `errno`).
    case refused(code: Int32)
    /// Not a message: the socket's buffer overflowed (`ENOBUFS`) and announcements were lost, so the table must be
    /// read again.
    case overrun
    /// An announcement of another route or of a routing rule, which may change the path to the Internet.
    case otherChange
    /// The answer to a ``RouteMessages/pathRequest(sequence:family:)``: the interface traffic of `family` to the
    /// Internet leaves through, nil when there is no route.
    case path(family: UInt8, interfaceIndex: UInt32?)
    /// The answer to a ``RouteMessages/linkRequest(index:)``: what the interface is; nil kind and type 0 when it is
    /// gone.
    case link(InterfaceLink)
}

/// The byte layout of rtnetlink's route messages, as `<linux/netlink.h>` and `<linux/rtnetlink.h>` define it, and
/// the parser of what the kernel sends: only default routes of the main table are reported; everything else, and
/// anything malformed, is passed over without a crash.
///
/// A datagram is a run of messages, each a 16-byte header (`nlmsghdr`: length, type, flags, sequence, port, in host
/// byte order) and a payload, padded to 4 bytes. A route message's payload is a 12-byte `rtmsg` and attributes,
/// each a 4-byte header (length, type) and its value, padded to 4 bytes.
public enum RouteMessages {
    /// `AF_INET`.
    public static let inet: UInt8 = 2
    /// `AF_INET6`.
    public static let inet6: UInt8 = 10
    /// `RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE | RTMGRP_IPV4_RULE | (1 << (RTNLGRP_IPV6_RULE - 1))`: the
    /// multicast groups that announce changes of routes and of routing rules (which VPNs such as WireGuard's
    /// wg-quick route through).
    public static let routeGroups: UInt32 = 0x40 | 0x400 | 0x80 | 0x40000

    static let headerSize = 16
    static let routeMessageSize = 12
    static let messageError: UInt16 = 2
    static let messageDone: UInt16 = 3
    static let newRoute: UInt16 = 24
    static let deleteRoute: UInt16 = 25
    static let getRoute: UInt16 = 26
    static let newRule: UInt16 = 32
    static let deleteRule: UInt16 = 33
    static let mainTable: UInt32 = 254
    static let unicast: UInt8 = 1
    static let attributeTable: UInt16 = 15
    static let attributeGateway: UInt16 = 5
    static let attributeOutputInterface: UInt16 = 4
    static let attributePriority: UInt16 = 6

    /// The request for a dump of every route (`RTM_GETROUTE` with `NLM_F_REQUEST | NLM_F_DUMP`), numbered
    /// `sequence`, to send to the kernel; its answer ends with ``RouteEvent/dumpEnded``.
    public static func dumpRequest(sequence: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        append(UInt32(headerSize + routeMessageSize), to: &bytes)
        append(getRoute, to: &bytes)
        append(UInt16(0x1 | 0x300), to: &bytes)
        append(sequence, to: &bytes)
        append(UInt32(0), to: &bytes)
        bytes += [UInt8](repeating: 0, count: routeMessageSize)
        return bytes
    }

    /// The events in one datagram from the routing socket, in order. Parsing stops at the first message whose
    /// length does not fit; a route message too short for its fixed part, or an attribute that does not fit, is
    /// skipped.
    public static func events(in datagram: [UInt8]) -> [RouteEvent] {
        var events: [RouteEvent] = []
        var offset = 0
        while datagram.count - offset >= headerSize {
            let length = Int(read(UInt32.self, datagram, at: offset))
            guard length >= headerSize, length <= datagram.count - offset else { break }
            let type = read(UInt16.self, datagram, at: offset + 4)
            let sequence = read(UInt32.self, datagram, at: offset + 8)
            let payload = datagram[(offset + headerSize)..<(offset + length)]
            if let answer = lookupAnswer(
                type: type, sequence: sequence, in: datagram, payload.startIndex..<payload.endIndex)
            {
                events.append(answer)
                offset += (length + 3) & ~3
                continue
            }
            switch type {
            case messageDone: events.append(.dumpEnded)
            case messageError:
                if payload.count >= 4 {
                    let code = Int32(bitPattern: read(UInt32.self, datagram, at: payload.startIndex))
                    if code != 0 { events.append(.refused(code: code)) }
                }
            case newRoute, deleteRoute:
                // An announcement is numbered 0; a dump's answer carries the dump's number.
                if let route = defaultRoute(in: datagram, payload.startIndex..<payload.endIndex) {
                    events.append(
                        type == deleteRoute ? .removed(route) : sequence == 0 ? .added(route) : .dumped(route))
                } else if sequence == 0 {
                    events.append(.otherChange)
                }
            case newRule, deleteRule: if sequence == 0 { events.append(.otherChange) }
            default: break
            }
            offset += (length + 3) & ~3
        }
        return events
    }

    /// The default route a route message's payload describes, or nil when it describes another route (one with a
    /// destination, another table, a local or unreachable route, an unknown family) or is malformed.
    private static func defaultRoute(in bytes: [UInt8], _ range: Range<Int>) -> DefaultRoute? {
        guard range.count >= routeMessageSize else { return nil }
        let start = range.lowerBound
        let family = bytes[start]
        let destinationLength = bytes[start + 1]
        var table = UInt32(bytes[start + 4])
        let type = bytes[start + 7]
        guard family == inet || family == inet6, destinationLength == 0, type == unicast else { return nil }
        var route = DefaultRoute(family: family, interfaceIndex: 0, gateway: [], metric: 0)
        var offset = start + routeMessageSize
        while range.upperBound - offset >= 4 {
            let length = Int(read(UInt16.self, bytes, at: offset))
            let attribute = read(UInt16.self, bytes, at: offset + 2)
            guard length >= 4, length <= range.upperBound - offset else { return nil }
            let value = (offset + 4)..<(offset + length)
            switch (attribute, value.count) {
            case (attributeTable, 4): table = read(UInt32.self, bytes, at: value.lowerBound)
            case (attributeOutputInterface, 4): route.interfaceIndex = read(UInt32.self, bytes, at: value.lowerBound)
            case (attributePriority, 4): route.metric = read(UInt32.self, bytes, at: value.lowerBound)
            case (attributeGateway, family == inet ? 4 : 16): route.gateway = Array(bytes[value])
            default: break
            }
            offset += (length + 3) & ~3
        }
        return table == mainTable ? route : nil
    }

    static func read<Integer: FixedWidthInteger>(_: Integer.Type, _ bytes: [UInt8], at offset: Int)
        -> Integer
    {
        var value = Integer.zero
        withUnsafeMutableBytes(of: &value) { target in
            for index in 0..<MemoryLayout<Integer>.size { target[index] = bytes[offset + index] }
        }
        return value
    }

    static func append<Integer: FixedWidthInteger>(_ value: Integer, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value) { bytes += $0 }
    }
}

/// The default routes the kernel has reported, kept from the dump and the announcements that follow it.
///
/// It is *settled* once a dump has ended; until then (at the start, and after the socket lost announcements and
/// the table is read again) what it holds is not the whole table.
public struct DefaultRouteTable: Sendable, Equatable {
    /// The default routes known.
    public private(set) var routes: Set<DefaultRoute> = []
    /// True once a dump has ended since the last ``beginDump()``.
    public private(set) var isSettled = false

    /// No routes, not settled.
    public init() {}

    /// Forgets every route, to be read again from a dump.
    public mutating func beginDump() {
        routes = []
        isSettled = false
    }

    /// Takes `event` in; returns true when it changed ``routes`` or settled the table.
    @discardableResult
    public mutating func apply(_ event: RouteEvent) -> Bool {
        switch event {
        case .added(let route), .dumped(let route): return routes.insert(route).inserted
        case .removed(let route): return routes.remove(route) != nil
        case .dumpEnded:
            defer { isSettled = true }
            return !isSettled
        case .refused, .overrun, .otherChange, .path, .link: return false
        }
    }
}
