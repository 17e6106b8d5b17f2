import Foundation
import Glibc
import Loop
import Synchronization
import TestBasics

/// A plain TCP listener on 127.0.0.1 standing in for gpsd: it greets each client with gpsd's VERSION report and
/// answers nothing else, and records each connection, what the peer sent and when the peer closed it. With
/// `hangUp` it closes each connection as soon as it accepts it, without a word.
public final class TCPListener: Sendable {
    /// What gpsd 3.22 sends a new client first.
    static let greeting =
        "{\"class\":\"VERSION\",\"release\":\"3.22\",\"rev\":\"3.22\",\"proto_major\":3,\"proto_minor\":14}\r\n"

    /// One accepted connection.
    public struct Peer: Sendable {
        /// Monotonic nanoseconds when it was accepted.
        public var acceptedAt: Int64
        /// Monotonic nanoseconds when the peer closed it, nil while open.
        public var closedAt: Int64?
        /// Everything the peer sent.
        public var received: String
    }

    private struct State {
        var peers: [Peer] = []
        var stopRequested = false
        var stopped = false
    }

    /// The port it listens on.
    public let port: UInt16
    private let hangUp: Bool
    private let state = Mutex(State())

    /// Listens on `port` (0: any free port) and accepts on a thread of its own.
    public init(port: UInt16 = 0, hangUp: Bool = false) throws {
        self.hangUp = hangUp
        let fd = try LoopbackTCP.socketDescriptor()
        do {
            try LoopbackTCP.bind(fd, port: port)
            guard listen(fd, 16) == 0 else { throw TestEnvironmentError("listen: errno \(errno)") }
            self.port = try LoopbackTCP.boundPort(fd)
        } catch {
            Glibc.close(fd)
            throw error
        }
        let thread = Thread { [self] in run(listening: fd) }
        thread.start()
    }

    /// The connections accepted so far.
    public var peers: [Peer] { state.withLock { $0.peers } }
    /// How many connections were accepted.
    public var accepted: Int { peers.count }
    /// How many accepted connections the peer has not closed.
    public var open: Int { peers.filter { $0.closedAt == nil }.count }

    /// Stops listening and closes every connection, within 20 ms.
    public func close() { state.withLock { $0.stopRequested = true } }

    /// Waits until the port is free after ``close()``.
    @concurrent
    public func closed() async {
        while !state.withLock({ $0.stopped }) { try? await Task.sleep(for: .milliseconds(5)) }
    }

    private func run(listening: Int32) {
        var clients: [(fd: Int32, index: Int)] = []
        defer {
            Glibc.close(listening)
            for client in clients { Glibc.close(client.fd) }
            state.withLock { $0.stopped = true }
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if state.withLock({ $0.stopRequested }) { return }
            var fds = [pollfd(fd: listening, events: Int16(POLLIN), revents: 0)]
            fds += clients.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            guard poll(&fds, nfds_t(fds.count), 20) > 0 else { continue }
            if fds[0].revents & Int16(POLLIN) != 0 {
                let fd = accept(listening, nil, nil)
                if fd >= 0 {
                    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                    let index = state.withLock { state in
                        state.peers.append(Peer(acceptedAt: monotonicNanoseconds(), closedAt: nil, received: ""))
                        return state.peers.count - 1
                    }
                    if hangUp {
                        Glibc.close(fd)
                        state.withLock { $0.peers[index].closedAt = monotonicNanoseconds() }
                    } else {
                        // Greet the client as gpsd does, so it counts the connection as up.
                        var greeting = Array(TCPListener.greeting.utf8)
                        _ = send(fd, &greeting, greeting.count, Int32(MSG_NOSIGNAL))
                        clients.append((fd, index))
                    }
                }
            }
            var closed: Set<Int32> = []
            for (position, entry) in fds.enumerated().dropFirst() where entry.revents != 0 {
                let client = clients[position - 1]
                let count = recv(client.fd, &buffer, buffer.count, 0)
                if count > 0 {
                    let text = String(decoding: buffer[0..<count], as: UTF8.self)
                    state.withLock { $0.peers[client.index].received += text }
                } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                    state.withLock { $0.peers[client.index].closedAt = monotonicNanoseconds() }
                    Glibc.close(client.fd)
                    closed.insert(client.fd)
                }
            }
            clients.removeAll { closed.contains($0.fd) }
        }
    }
}
