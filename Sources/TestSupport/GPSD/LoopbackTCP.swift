import Foundation
import Glibc
import Loop
import Synchronization
import TestBasics

/// Loopback TCP helpers.
public enum LoopbackTCP {
    /// A port nothing listens on now, never handed out before in this process, and below the kernel's ephemeral
    /// range: a port from that range could meanwhile become the local end of some outgoing connection, and
    /// could be handed out again by another bind to port 0.
    public static func freePort() throws -> UInt16 {
        let range = ephemeralRange()
        let low = 10_000
        let high = max(low + 1000, min(range.lowerBound, 65_536)) - 1
        for _ in 0..<1000 {
            let candidate = UInt16(Int.random(in: low...high))
            guard handedOut.withLock({ $0.insert(candidate).inserted }) else { continue }
            let fd = try socketDescriptor()
            defer { close(fd) }
            if (try? bind(fd, port: candidate)) != nil { return candidate }
        }
        throw TestEnvironmentError("no free TCP port in \(low)...\(high)")
    }

    private static let handedOut = Mutex<Set<UInt16>>([])

    /// `net.ipv4.ip_local_port_range`.
    private static func ephemeralRange() -> ClosedRange<Int> {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let numbers = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int($0) }
        return numbers.count == 2 && numbers[0] <= numbers[1] ? numbers[0]...numbers[1] : 32_768...60_999
    }

    /// A connected socket to 127.0.0.1:`port`, or nil when nothing accepts there.
    public static func connect(port: UInt16) -> Int32? {
        guard let fd = try? socketDescriptor() else { return nil }
        var address = loopback(port)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// What a server on 127.0.0.1:`port` sends first, waiting up to `milliseconds`; nil when nothing accepts or
    /// nothing comes. gpsd greets each client with its VERSION only once its main loop runs, while the kernel
    /// accepts connections as soon as it listens.
    public static func greeting(port: UInt16, milliseconds: Int32 = 200) -> String? {
        guard let fd = connect(port: port) else { return nil }
        defer { close(fd) }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, milliseconds) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
    }

    static func socketDescriptor() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestEnvironmentError("socket: errno \(errno)") }
        return fd
    }

    static func loopback(_ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }

    static func bind(_ fd: Int32, port: UInt16) throws {
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = loopback(port)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else { throw TestEnvironmentError("cannot bind 127.0.0.1:\(port): errno \(errno)") }
    }

    static func boundPort(_ fd: Int32) throws -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let status = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard status == 0 else { throw TestEnvironmentError("getsockname: errno \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }
}
