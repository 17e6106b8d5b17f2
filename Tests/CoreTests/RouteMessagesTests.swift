import Testing
import WhereaboutsCore

/// rtnetlink messages as the kernel writes them (host byte order), for the parser's tests.
private enum Kernel {
    static func integer<Integer: FixedWidthInteger>(_ value: Integer) -> [UInt8] {
        withUnsafeBytes(of: value) { Array($0) }
    }

    static func attribute(_ type: UInt16, _ value: [UInt8]) -> [UInt8] {
        let bytes = integer(UInt16(4 + value.count)) + integer(type) + value
        return bytes + [UInt8](repeating: 0, count: (4 - bytes.count % 4) % 4)
    }

    static func message(type: UInt16, sequence: UInt32 = 0, _ payload: [UInt8]) -> [UInt8] {
        let bytes =
            integer(UInt32(16 + payload.count)) + integer(type) + integer(UInt16(0)) + integer(sequence)
            + integer(UInt32(0)) + payload
        return bytes + [UInt8](repeating: 0, count: (4 - bytes.count % 4) % 4)
    }

    /// An `RTM_NEWROUTE` (24) or `RTM_DELROUTE` (25) of `family` to a destination `destinationLength` bits long.
    static func route(
        _ type: UInt16 = 24, family: UInt8 = RouteMessages.inet, destinationLength: UInt8 = 0, table: UInt8 = 254,
        kind: UInt8 = 1, interface: UInt32 = 3, gateway: [UInt8] = [192, 0, 2, 1], metric: UInt32? = 100,
        extra: [UInt8] = [], sequence: UInt32 = 0
    ) -> [UInt8] {
        var payload: [UInt8] = [family, destinationLength, 0, 0, table, 4, 0, kind] + integer(UInt32(0))
        payload += attribute(15, integer(UInt32(table)))
        payload += attribute(4, integer(interface))
        if !gateway.isEmpty { payload += attribute(5, gateway) }
        if let metric { payload += attribute(6, integer(metric)) }
        return message(type: type, sequence: sequence, payload + extra)
    }

    static let done = message(type: 3, integer(Int32(0)))
}

@Suite("Route messages")
struct RouteMessagesTests {
    private let home = DefaultRoute(
        family: RouteMessages.inet, interfaceIndex: 3, gateway: [192, 0, 2, 1], metric: 100)

    @Test func aDumpGivesItsDefaultRoutesThenItsEnd() {
        let v6Gateway: [UInt8] = [0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [1]
        // A dump's answer carries the dump's number: its routes are the table's, not changes.
        let datagram =
            Kernel.route(sequence: 5) + Kernel.route(destinationLength: 24, gateway: [], sequence: 5)
            + Kernel.route(family: RouteMessages.inet6, interface: 3, gateway: v6Gateway, metric: 1024, sequence: 5)
            + Kernel.done
        let events = RouteMessages.events(in: datagram)
        #expect(
            events == [
                .dumped(home),
                .dumped(
                    DefaultRoute(family: RouteMessages.inet6, interfaceIndex: 3, gateway: v6Gateway, metric: 1024)),
                .dumpEnded,
            ])
        #expect(home.description == "IPv4 via 192.0.2.1 on interface 3")
        #expect(
            DefaultRoute(family: RouteMessages.inet6, interfaceIndex: 2, gateway: v6Gateway, metric: 0).description
                == "IPv6 via fe80:0:0:0:0:0:0:1 on interface 2")
    }

    @Test func onlyUnicastDefaultRoutesOfTheMainTableCountAndOtherRoutesAndRulesAreChanges() {
        let others =
            Kernel.route(table: 255) + Kernel.route(kind: 2) + Kernel.route(destinationLength: 8)
            + Kernel.route(family: 7) + Kernel.message(type: 32, [UInt8](repeating: 0, count: 12))
            + Kernel.message(type: 33, [UInt8](repeating: 0, count: 12))
        #expect(RouteMessages.events(in: others) == [RouteEvent](repeating: .otherChange, count: 6))
        #expect(RouteMessages.events(in: Kernel.message(type: 20, [0, 0, 0, 0])).isEmpty)
        #expect(RouteMessages.events(in: Kernel.route(25)) == [.removed(home)])
        let pointToPoint = DefaultRoute(family: RouteMessages.inet, interfaceIndex: 9, gateway: [], metric: 0)
        #expect(
            RouteMessages.events(in: Kernel.route(interface: 9, gateway: [], metric: nil)) == [.added(pointToPoint)])
    }

    @Test func theKernelsRefusalIsReportedAndItsAcknowledgementIsNot() {
        let refusal = Kernel.message(type: 2, Kernel.integer(Int32(-1)) + [UInt8](repeating: 0, count: 16))
        let acknowledgement = Kernel.message(type: 2, Kernel.integer(Int32(0)) + [UInt8](repeating: 0, count: 16))
        #expect(RouteMessages.events(in: refusal + acknowledgement) == [.refused(code: -1)])
    }

    @Test func malformedBytesEndTheDatagramOrSkipTheMessage() {
        let good = Kernel.route()
        // Cut anywhere, a datagram gives at most the messages before the cut, never a route made of the rest.
        for cut in 0..<good.count {
            #expect(RouteMessages.events(in: Array(good[0..<cut])).isEmpty, "cut at \(cut)")
        }
        // A message claiming more than the datagram holds, or less than its header, stops the parse.
        var overlong = good
        overlong[0] = 0xff
        #expect(RouteMessages.events(in: overlong).isEmpty)
        var tooShort = good + good
        tooShort[0] = 4
        tooShort[1] = 0
        #expect(RouteMessages.events(in: tooShort).isEmpty)
        // An attribute longer than its message drops that message only.
        let badAttribute = Kernel.route(extra: Kernel.integer(UInt16(200)) + Kernel.integer(UInt16(5)))
        #expect(RouteMessages.events(in: badAttribute + good) == [.otherChange, .added(home)])
        // A gateway of the wrong length for its family is not a gateway.
        let noGateway = RouteEvent.added(
            DefaultRoute(family: RouteMessages.inet, interfaceIndex: 3, gateway: [], metric: 100))
        #expect(RouteMessages.events(in: Kernel.route(gateway: [1, 2, 3])) == [noGateway])
        #expect(RouteMessages.events(in: Kernel.route(gateway: [UInt8](repeating: 1, count: 16))) == [noGateway])
    }

    @Test func aPathLookupAsksTheRouteToTheInternetAndItsAnswerNamesTheInterface() {
        let request = RouteMessages.pathRequest(sequence: 6, family: RouteMessages.inet)
        #expect(request.count == 16 + 12 + 8)
        #expect(
            Array(request[4..<6]) == Kernel.integer(UInt16(26)) && Array(request[6..<8]) == Kernel.integer(UInt16(1)))
        let sequence = Array(request[8..<12]).withUnsafeBytes { $0.load(as: UInt32.self) }
        #expect(sequence == 0x8000_0006)
        #expect(request[16] == RouteMessages.inet && request[17] == 32)
        #expect(Array(request[28...]) == Kernel.integer(UInt16(8)) + Kernel.integer(UInt16(1)) + [9, 9, 9, 9])
        let request6 = RouteMessages.pathRequest(sequence: 6, family: RouteMessages.inet6)
        #expect(request6.count == 16 + 12 + 20 && request6[17] == 128)
        #expect(Array(request6[8..<12]).withUnsafeBytes { $0.load(as: UInt32.self) } == 0x8000_0007)

        // The kernel's answer: a route to the address, with its output interface; or an error when there is none.
        var answer = Kernel.route(destinationLength: 32, interface: 7)
        answer.replaceSubrange(8..<12, with: Kernel.integer(UInt32(0x8000_0006)))
        var answer6 = Kernel.route(family: RouteMessages.inet6, destinationLength: 128, interface: 8, gateway: [])
        answer6.replaceSubrange(8..<12, with: Kernel.integer(UInt32(0x8000_0007)))
        let unreachable = Kernel.message(
            type: 2, sequence: 0x8000_0009, Kernel.integer(Int32(-101)) + [UInt8](repeating: 0, count: 16))
        #expect(
            RouteMessages.events(in: answer + answer6 + unreachable) == [
                .path(family: RouteMessages.inet, interfaceIndex: 7),
                .path(family: RouteMessages.inet6, interfaceIndex: 8),
                .path(family: RouteMessages.inet6, interfaceIndex: nil),
            ])
    }

    @Test func aLinkAnswerSaysWhetherTheInterfaceIsATunnel() {
        let request = RouteMessages.linkRequest(index: 7)
        #expect(request.count == 32 && Array(request[4..<6]) == Kernel.integer(UInt16(18)))
        #expect(Array(request[8..<12]).withUnsafeBytes { $0.load(as: UInt32.self) } == 0x4000_0007)
        #expect(Array(request[20..<24]) == Kernel.integer(UInt32(7)))
        func link(_ index: UInt32, type: UInt16, kind: String?) -> [UInt8] {
            var payload: [UInt8] =
                [0, 0] + Kernel.integer(type) + Kernel.integer(index) + [UInt8](repeating: 0, count: 8)
            payload += Kernel.attribute(3, Array("if\(index)\0".utf8))
            if let kind { payload += Kernel.attribute(18 | 0x8000, Kernel.attribute(1, Array("\(kind)\0".utf8))) }
            return Kernel.message(type: 16, sequence: 0x4000_0000 | index, payload)
        }
        let events = RouteMessages.events(
            in: link(3, type: 1, kind: nil) + link(4, type: 65534, kind: "wireguard") + link(5, type: 1, kind: "tun")
                + link(6, type: 512, kind: nil) + link(7, type: 1, kind: "bridge")
                + Kernel.message(
                    type: 2, sequence: 0x4000_0009, Kernel.integer(Int32(-19)) + [UInt8](repeating: 0, count: 16)))
        #expect(
            events == [
                .link(InterfaceLink(index: 3, type: 1, kind: nil)),
                .link(InterfaceLink(index: 4, type: 65534, kind: "wireguard")),
                .link(InterfaceLink(index: 5, type: 1, kind: "tun")),
                .link(InterfaceLink(index: 6, type: 512, kind: nil)),
                .link(InterfaceLink(index: 7, type: 1, kind: "bridge")),
                .link(InterfaceLink(index: 9, type: 0, kind: nil)),
            ])
        let tunnels = events.compactMap { event -> Bool? in
            if case .link(let link) = event { return link.isTunnel }
            return nil
        }
        #expect(tunnels == [false, true, true, true, false, false])
    }

    @Test func theDumpRequestAsksForEveryRoute() {
        let request = RouteMessages.dumpRequest(sequence: 7)
        #expect(request.count == 28)
        #expect(Array(request[0..<4]) == Kernel.integer(UInt32(28)))
        #expect(Array(request[4..<6]) == Kernel.integer(UInt16(26)))
        #expect(Array(request[6..<8]) == Kernel.integer(UInt16(0x301)))
        #expect(Array(request[8..<12]) == Kernel.integer(UInt32(7)))
    }

    @Test func theTableSettlesAtTheDumpsEnd() {
        var table = DefaultRouteTable()
        #expect(!table.isSettled)
        let changes = [
            table.apply(.added(home)), table.apply(.added(home)), table.apply(.dumpEnded), table.apply(.dumpEnded),
            table.apply(.removed(home)), table.apply(.overrun), table.apply(.refused(code: -1)),
        ]
        #expect(changes == [true, false, true, false, true, false, false])
        #expect(table.isSettled && table.routes.isEmpty)
        table.apply(.added(home))
        table.beginDump()
        #expect(table.routes.isEmpty && !table.isSettled)
    }
}
