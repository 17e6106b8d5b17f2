import Loop
import LoopScheduling
import WhereaboutsCore

#if canImport(Glibc)
    import Glibc
#endif

/// The kernel's routing socket (`AF_NETLINK`, `NETLINK_ROUTE`), subscribed to IPv4 and IPv6 route announcements.
///
/// Only datagrams from the kernel itself (port 0) are read: another process could send to the socket's port, and
/// what it says about routes is not believed. A full socket buffer (`ENOBUFS`) is reported as
/// ``RouteEvent/overrun``, so the table is read again.
@BusActor
public final class NetlinkRouteSource: RouteSource {
    private let watches: any DescriptorWatcher
    private var descriptor: Int32 = -1
    private var sequence: UInt32 = 0

    /// A source with no socket yet, its socket watched by `watches` once open.
    public init(watches: any DescriptorWatcher) { self.watches = watches }

    public func open(_ onEvents: @escaping @BusActor ([RouteEvent]) -> Void) -> String? {
        let socketDescriptor = socket(
            AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard socketDescriptor >= 0 else { return "socket: \(String(cString: strerror(errno)))" }
        // struct sockaddr_nl: family, padding, port (0: the kernel picks one), groups.
        var address = sockaddr_storage()
        let bound = withUnsafeMutableBytes(of: &address) { raw -> Int32 in
            raw.storeBytes(of: UInt16(AF_NETLINK), toByteOffset: 0, as: UInt16.self)
            raw.storeBytes(of: RouteMessages.routeGroups, toByteOffset: 8, as: UInt32.self)
            return raw.withMemoryRebound(to: sockaddr.self) { bind(socketDescriptor, $0.baseAddress, 12) }
        }
        guard bound == 0 else {
            let reason = "bind: \(String(cString: strerror(errno)))"
            close(socketDescriptor)
            return reason
        }
        descriptor = socketDescriptor
        watches.watchOnBus(socketDescriptor, for: .readable) { onEvents(Self.readAll(from: socketDescriptor)) }
        return nil
    }

    public func requestDump() {
        guard descriptor >= 0 else { return }
        sequence &+= 1
        sendRequest(RouteMessages.dumpRequest(sequence: sequence))
    }

    public func requestPath(family: UInt8) {
        guard descriptor >= 0 else { return }
        sequence &+= 2
        sendRequest(RouteMessages.pathRequest(sequence: sequence, family: family))
    }

    public func requestLink(index: UInt32) {
        guard descriptor >= 0 else { return }
        sendRequest(RouteMessages.linkRequest(index: index))
    }

    /// Sends `request` to the kernel; unsent (the kernel's queue full), the next announcement asks again.
    private func sendRequest(_ request: [UInt8]) {
        _ = request.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
    }

    /// What the datagrams waiting on `descriptor` say, those from the kernel only.
    private static func readAll(from descriptor: Int32) -> [RouteEvent] {
        var events: [RouteEvent] = []
        var buffer = [UInt8](repeating: 0, count: 32 << 10)
        while true {
            var sender = sockaddr_storage()
            var senderLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &sender) { address in
                    address.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, &senderLength)
                    }
                }
            }
            if count < 0 {
                if errno == ENOBUFS { events.append(.overrun) }
                if errno == EINTR || errno == ENOBUFS { continue }
                return events
            }
            let senderPort = withUnsafeBytes(of: &sender) { $0.load(fromByteOffset: 4, as: UInt32.self) }
            guard senderPort == 0 else { continue }
            events += RouteMessages.events(in: Array(buffer[0..<count]))
        }
    }
}
