/// An interface as the kernel describes it (`RTM_NEWLINK`): its index, its hardware type (`ifi_type`, an
/// `ARPHRD_` value) and its kind (`IFLA_INFO_KIND`, as `ip -d link` shows it), and whether it is a tunnel.
public struct InterfaceLink: Sendable, Equatable {
    /// The interface's index.
    public var index: UInt32
    /// `ifi_type`: `ARPHRD_ETHER` (1), `ARPHRD_PPP` (512), `ARPHRD_NONE` (65534) and so on; 0 when unknown.
    public var type: UInt16
    /// `IFLA_INFO_KIND`: `wireguard`, `tun`, `gre` and so on; nil for a plain device.
    public var kind: String?

    /// The hardware types of tunnels: PPP (512), IPIP (768), IPv6-in-IPv6 (769), SIT (776), GRE (778), IPv6 GRE
    /// (823), and none (65534), which WireGuard and layer-3 tun devices have.
    public static let tunnelTypes: Set<UInt16> = [512, 768, 769, 776, 778, 823, 65534]
    /// The kinds of tunnels: WireGuard, tun and tap (OpenVPN and most VPN clients), IP-in-IP, GRE, SIT, VTI,
    /// IPv6 tunnels and XFRM (IPsec) interfaces.
    public static let tunnelKinds: Set<String> = [
        "wireguard", "tun", "ipip", "gre", "gretap", "ip6gre", "ip6gretap", "sit", "vti", "vti6", "ip6tnl", "xfrm",
    ]

    /// An interface's description.
    public init(index: UInt32, type: UInt16, kind: String?) {
        self.index = index
        self.type = type
        self.kind = kind
    }

    /// Whether traffic through it goes through a tunnel (a VPN), so that the address the Internet sees is the
    /// tunnel's far end, not the machine's network.
    public var isTunnel: Bool { Self.tunnelTypes.contains(type) || kind.map(Self.tunnelKinds.contains) == true }
}

/// Asking the kernel which interface traffic to the Internet leaves through (`ip route get`), and what that
/// interface is: the kernel applies its routing rules and tables, so a VPN that routes through a table of its own
/// (WireGuard's wg-quick, NetworkManager) or through two half routes (OpenVPN's `def1`) is seen as well as one that
/// replaces the default route. No packet is sent. The Internet stands as ``internetAddress`` and
/// ``internetAddress6`` (Quad9's resolvers, any public address would do).
extension RouteMessages {
    /// The IPv4 address a path lookup asks about.
    public static let internetAddress: [UInt8] = [9, 9, 9, 9]
    /// The IPv6 address a path lookup asks about.
    public static let internetAddress6: [UInt8] = [0x26, 0x20, 0, 0xfe] + [UInt8](repeating: 0, count: 10) + [0, 0xfe]
    /// The sequence numbers of path lookups have this bit set (and the family's in the lowest bit).
    static let pathTag: UInt32 = 0x8000_0000
    /// The sequence numbers of link requests have this bit set, and the interface's index below it.
    static let linkTag: UInt32 = 0x4000_0000
    static let getLink: UInt16 = 18
    static let newLink: UInt16 = 16
    static let linkMessageSize = 16
    static let attributeDestination: UInt16 = 1
    static let attributeLinkInfo: UInt16 = 18
    static let attributeInfoKind: UInt16 = 1

    /// The request for the route traffic of `family` (``inet`` or ``inet6``) to the Internet takes (`RTM_GETROUTE`
    /// for ``internetAddress``), numbered from `sequence`; its answer is ``RouteEvent/path(family:interfaceIndex:)``.
    public static func pathRequest(sequence: UInt32, family: UInt8) -> [UInt8] {
        let address = family == inet6 ? internetAddress6 : internetAddress
        var bytes: [UInt8] = []
        append(UInt32(headerSize + routeMessageSize + 4 + address.count), to: &bytes)
        append(getRoute, to: &bytes)
        append(UInt16(0x1), to: &bytes)
        append(pathTag | (sequence & 0x3fff_fffe) | (family == inet6 ? 1 : 0), to: &bytes)
        append(UInt32(0), to: &bytes)
        bytes += [family, UInt8(address.count * 8)] + [UInt8](repeating: 0, count: routeMessageSize - 2)
        append(UInt16(4 + address.count), to: &bytes)
        append(attributeDestination, to: &bytes)
        bytes += address
        return bytes
    }

    /// The request for what interface `index` is (`RTM_GETLINK`); its answer is ``RouteEvent/link(_:)``.
    public static func linkRequest(index: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        append(UInt32(headerSize + linkMessageSize), to: &bytes)
        append(getLink, to: &bytes)
        append(UInt16(0x1), to: &bytes)
        append(linkTag | (index & 0x3fff_ffff), to: &bytes)
        append(UInt32(0), to: &bytes)
        bytes += [0, 0, 0, 0]
        append(index, to: &bytes)
        bytes += [UInt8](repeating: 0, count: 8)
        return bytes
    }

    /// The answer a message numbered `sequence` gives to a path lookup or a link request, nil for any other.
    static func lookupAnswer(type: UInt16, sequence: UInt32, in bytes: [UInt8], _ range: Range<Int>) -> RouteEvent? {
        if sequence & pathTag != 0 {
            let family = sequence & 1 == 1 ? inet6 : inet
            guard type == newRoute else {
                return type == messageError ? .path(family: family, interfaceIndex: nil) : nil
            }
            return .path(family: family, interfaceIndex: outputInterface(in: bytes, range))
        }
        if sequence & linkTag != 0 {
            let index = sequence & 0x3fff_ffff
            guard type == newLink, range.count >= linkMessageSize else {
                return type == messageError ? .link(InterfaceLink(index: index, type: 0, kind: nil)) : nil
            }
            let linkType = read(UInt16.self, bytes, at: range.lowerBound + 2)
            return .link(InterfaceLink(index: index, type: linkType, kind: kind(in: bytes, range)))
        }
        return nil
    }

    /// `RTA_OIF` of a route message's payload.
    private static func outputInterface(in bytes: [UInt8], _ range: Range<Int>) -> UInt32? {
        guard range.count >= routeMessageSize else { return nil }
        return attributes(in: bytes, (range.lowerBound + routeMessageSize)..<range.upperBound).first {
            $0.type == attributeOutputInterface && $0.value.count == 4
        }.map { read(UInt32.self, bytes, at: $0.value.lowerBound) }
    }

    /// `IFLA_INFO_KIND` within `IFLA_LINKINFO` of a link message's payload.
    private static func kind(in bytes: [UInt8], _ range: Range<Int>) -> String? {
        let top = attributes(in: bytes, (range.lowerBound + linkMessageSize)..<range.upperBound)
        guard let info = top.first(where: { $0.type & 0x3fff == attributeLinkInfo }) else { return nil }
        guard let kind = attributes(in: bytes, info.value).first(where: { $0.type & 0x3fff == attributeInfoKind })
        else { return nil }
        let text = bytes[kind.value].prefix { $0 != 0 }
        return String(validating: text, as: UTF8.self)
    }

    /// The attributes in `range`, each its type and its value's range; parsing stops at one that does not fit.
    private static func attributes(in bytes: [UInt8], _ range: Range<Int>) -> [(type: UInt16, value: Range<Int>)] {
        var found: [(type: UInt16, value: Range<Int>)] = []
        var offset = range.lowerBound
        while range.upperBound - offset >= 4 {
            let length = Int(read(UInt16.self, bytes, at: offset))
            guard length >= 4, length <= range.upperBound - offset else { break }
            found.append((read(UInt16.self, bytes, at: offset + 2), (offset + 4)..<(offset + length)))
            offset += (length + 3) & ~3
        }
        return found
    }
}
