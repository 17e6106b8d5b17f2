import Foundation
import Glibc
import Loop
import Synchronization
import TestBasics

// Everything the gpsd tests and the benchmark need besides the daemon: NMEA epochs, a pseudo-terminal to feed
// them through, gpsd and gpsfake as child processes, a plain gpsd client that records gpsd's own reports, and a
// TCP listener that stands in for gpsd to count connections. Nothing here blocks for long; the waits that poll
// are `async` and run off the bus thread.

// MARK: - NMEA

/// NMEA 0183 helpers.
public enum NMEA {
    /// `$body*HH\r\n`, HH being the XOR of the body's bytes.
    public static func sentence(_ body: String) -> String {
        let checksum = body.utf8.reduce(UInt8(0), ^)
        return "$" + body + "*" + String(format: "%02X", checksum) + "\r\n"
    }

    /// The wall clock now, in seconds since the Unix epoch, cut to the hundredths NMEA times carry.
    public static func wallNow() -> Double { Double(wallMicroseconds() / 10_000) / 100 }
}

/// One receiver epoch as NMEA: GGA, GSA and RMC, then GST when asked, in the order receivers send them.
public struct NMEAEpoch: Sendable, Equatable {
    /// The fix time, seconds since the Unix epoch (UTC); hundredths are kept.
    public var time: Double
    /// Degrees north.
    public var latitude: Double
    /// Degrees east.
    public var longitude: Double
    /// Metres above mean sea level (GGA's altitude).
    public var altitude: Double
    /// Geoid height above the ellipsoid, metres (GGA).
    public var geoidSeparation: Double
    /// Speed over ground in knots (RMC).
    public var speedKnots: Double
    /// Course over ground in degrees (RMC).
    public var course: Double
    /// Horizontal dilution of precision (GGA and GSA).
    public var hdop: Double
    /// Whether a GST (pseudorange error statistics) sentence ends the epoch.
    public var includesGST: Bool

    public init(
        time: Double, latitude: Double, longitude: Double, altitude: Double = 545.4, geoidSeparation: Double = 46.9,
        speedKnots: Double = 22.4, course: Double = 84.4, hdop: Double = 0.9, includesGST: Bool = false
    ) {
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.geoidSeparation = geoidSeparation
        self.speedKnots = speedKnots
        self.course = course
        self.hdop = hdop
        self.includesGST = includesGST
    }

    /// Speed over ground in metres per second.
    public var speed: Double { speedKnots * 1852 / 3600 }

    /// The sentences, each with its checksum and CRLF.
    public var sentences: [String] {
        let centiseconds = Int64((time * 100).rounded())
        var seconds = time_t(centiseconds / 100)
        var utc = tm()
        gmtime_r(&seconds, &utc)
        let clock = String(format: "%02d%02d%02d.%02d", utc.tm_hour, utc.tm_min, utc.tm_sec, Int32(centiseconds % 100))
        let date = String(format: "%02d%02d%02d", utc.tm_mday, utc.tm_mon + 1, utc.tm_year % 100)
        let north = NMEAEpoch.angle(latitude, degreeDigits: 2, positive: "N", negative: "S")
        let east = NMEAEpoch.angle(longitude, degreeDigits: 3, positive: "E", negative: "W")
        let dop = String(format: "%.2f", hdop)
        var lines = [
            NMEA.sentence(
                "GPGGA,\(clock),\(north),\(east),1,08,\(dop),\(String(format: "%.1f", altitude)),M,"
                    + "\(String(format: "%.1f", geoidSeparation)),M,,"),
            NMEA.sentence(
                "GPGSA,A,3,04,05,09,12,24,25,29,31,,,,,\(String(format: "%.2f", hdop * 2)),\(dop),"
                    + String(format: "%.2f", hdop * 1.6)),
            NMEA.sentence(
                "GPRMC,\(clock),A,\(north),\(east),\(String(format: "%.3f", speedKnots)),"
                    + "\(String(format: "%.2f", course)),\(date),,,A"),
        ]
        if includesGST { lines.append(NMEA.sentence("GPGST,\(clock),1.0,2.5,1.5,45.0,2.0,1.8,3.2")) }
        return lines
    }

    /// The epoch as one block of text.
    public var text: String { sentences.joined() }

    /// `ddmm.mmmmmm,N` or `dddmm.mmmmmm,E`.
    private static func angle(_ value: Double, degreeDigits: Int, positive: String, negative: String) -> String {
        let magnitude = abs(value)
        let degrees = Int(magnitude)
        let minutes = (magnitude - Double(degrees)) * 60
        let format = degreeDigits == 2 ? "%02d%09.6f" : "%03d%09.6f"
        return String(format: format, degrees, minutes) + "," + (value < 0 ? negative : positive)
    }
}

// MARK: - Small shared state

/// A value shared between a test and the threads of this file.
public final class Shared<Value: Sendable>: Sendable {
    private let state: Mutex<Value>
    public init(_ value: Value) { state = Mutex(value) }
    public var value: Value {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
    /// Changes the value under the lock and returns what `body` returns.
    public func update<T: Sendable>(_ body: (inout Value) -> T) -> T { state.withLock { body(&$0) } }
}

/// Polls `condition` every 10 ms without blocking a thread, up to `timeout`.
@concurrent
public func eventually(
    _ what: String, timeout: Duration = .seconds(10), _ condition: @Sendable () throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else {
            throw TestEnvironmentError("timed out after \(timeout) waiting for \(what)")
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

// MARK: - TCP

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

    /// True when something accepts connections on 127.0.0.1:`port` (the probe connection is closed at once).
    public static func isListening(port: UInt16) -> Bool {
        guard let fd = connect(port: port) else { return false }
        close(fd)
        return true
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
        var dropRequested = false
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

    /// Closes every accepted connection from this side (gpsd going away), and goes on listening.
    public func dropConnections() { state.withLock { $0.dropRequested = true } }

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
            let (drop, stop) = state.withLock { state in
                defer { state.dropRequested = false }
                return (state.dropRequested, state.stopRequested)
            }
            if stop { return }
            if drop {
                for client in clients { Glibc.close(client.fd) }
                clients.removeAll()
            }
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

// MARK: - Pseudo-terminal

/// A pseudo-terminal whose device end gpsd opens as its receiver; the test writes NMEA to the other end.
///
/// The test keeps the device end open too, so gpsd can be killed and restarted on the same device without a
/// hang-up. Writes never block: with nobody reading, what does not fit is dropped.
public final class ReceiverTerminal: Sendable {
    /// The device path, `/dev/pts/N`.
    public let path: String
    private let controller: Int32
    private let device: Int32
    private let closed = Mutex(false)

    public init() throws {
        let controller = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard controller >= 0 else { throw TestEnvironmentError("cannot open /dev/ptmx: errno \(errno)") }
        var name = [CChar](repeating: 0, count: 256)
        guard ReceiverTerminal.libc("grantpt", controller) == 0, ReceiverTerminal.libc("unlockpt", controller) == 0,
            ReceiverTerminal.ptsname(controller, &name) == 0
        else {
            Glibc.close(controller)
            throw TestEnvironmentError("cannot set up a pseudo-terminal: errno \(errno)")
        }
        _ = fcntl(controller, F_SETFL, fcntl(controller, F_GETFL) | O_NONBLOCK)
        let path = name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let device = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard device >= 0 else {
            Glibc.close(controller)
            throw TestEnvironmentError("cannot open \(path): errno \(errno)")
        }
        // Raw, so that nothing is echoed back or translated before gpsd sets its own modes.
        var attributes = termios()
        tcgetattr(device, &attributes)
        cfmakeraw(&attributes)
        tcsetattr(device, TCSANOW, &attributes)
        self.path = path
        self.controller = controller
        self.device = device
    }

    /// glibc's `grantpt` or `unlockpt`, which Swift's Glibc module does not import (they need `_XOPEN_SOURCE`).
    private static func libc(_ name: String, _ fd: Int32) -> Int32 {
        typealias Function = @convention(c) (Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return -1 }
        return unsafeBitCast(symbol, to: Function.self)(fd)
    }

    /// glibc's `ptsname_r`, likewise.
    private static func ptsname(_ fd: Int32, _ name: inout [CChar]) -> Int32 {
        typealias Function = @convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "ptsname_r") else { return -1 }
        let count = name.count
        return name.withUnsafeMutableBufferPointer {
            unsafeBitCast(symbol, to: Function.self)(fd, $0.baseAddress!, count)
        }
    }

    /// Writes `text` for gpsd to read; returns the monotonic time just before the write, in nanoseconds.
    @discardableResult
    public func write(_ text: String) -> Int64 {
        let bytes = Array(text.utf8)
        return closed.withLock { closed in
            let before = monotonicNanoseconds()
            guard !closed else { return before }
            _ = bytes.withUnsafeBytes { Glibc.write(controller, $0.baseAddress, $0.count) }
            // Whatever gpsd wrote to its receiver is read and dropped, so it can never fill up.
            var sink = [UInt8](repeating: 0, count: 4096)
            while read(controller, &sink, sink.count) > 0 {}
            return before
        }
    }

    /// Closes both ends.
    public func close() {
        closed.withLock { closed in
            guard !closed else { return }
            closed = true
            Glibc.close(controller)
            Glibc.close(device)
        }
    }

    deinit { close() }
}

// MARK: - gpsd and gpsfake

/// `gpsd -N -n -b -s 38400 -S PORT DEVICE` as a child process, to be killed and restarted by pid.
///
/// `-b` (read-only: no probing of the receiver) and a fixed `-s` speed make gpsd take NMEA from a pty within a
/// fraction of a second; with autobauding and driver probes it takes about 3 s and loses what came meanwhile.
public final class GPSDProcess: Sendable {
    /// The receiver device.
    public let device: String
    /// The TCP port gpsd serves.
    public let port: UInt16
    /// gpsd's standard output and error.
    public let logFile: URL
    private let process = Mutex<ChildProcess?>(nil)

    public init(device: String, port: UInt16, logFile: URL) {
        self.device = device
        self.port = port
        self.logFile = logFile
    }

    /// Starts gpsd and waits until it serves clients (its device is open by then: `-n`).
    @concurrent
    public func start() async throws {
        let child = try ChildProcess(
            try Executables.find("gpsd"), ["-N", "-n", "-b", "-s", "38400", "-S", String(port), device],
            logFile: logFile)
        process.withLock { $0 = child }
        try await eventually("gpsd to serve on port \(port)") { [port] in
            guard child.isRunning else { throw TestEnvironmentError("gpsd exited:\n\(child.log)") }
            return LoopbackTCP.greeting(port: port)?.contains("\"VERSION\"") ?? false
        }
    }

    /// The running gpsd's process id.
    public var pid: pid_t? { process.withLock { $0?.pid } }

    /// Kills gpsd with SIGKILL (no goodbye to its clients) and reaps it.
    @concurrent
    public func kill() async throws {
        guard let child = process.withLock({ $0 }) else { return }
        child.signal(SIGKILL)
        try await eventually("gpsd \(child.pid) to exit", timeout: .seconds(10)) { !child.isRunning }
    }

    /// Stops gpsd if it runs: SIGTERM now, SIGKILL after 2 s; the waiting happens on a thread of its own, so
    /// that a test on the bus thread is not held up.
    public func stop() {
        guard let child = process.withLock({ $0 }) else { return }
        child.signal(SIGTERM)
        Thread { child.stop(grace: 2) }.start()
    }

    deinit { stop() }
}

/// `gpsfake -q -n -W 0 -P PORT -c CYCLE LOG`: gpsd fed from a log, one sentence every `cycle` seconds.
///
/// gpsfake's gpsd is stopped with it (gpsfake does not always pass SIGTERM on, so its children are found and
/// killed too).
public final class GPSFake: Sendable {
    /// The TCP port its gpsd serves.
    public let port: UInt16
    private let process: ChildProcess

    /// Starts gpsfake on `log` and waits until its gpsd accepts connections.
    @concurrent
    public static func start(log: URL, port: UInt16, cycle: Double, logFile: URL) async throws -> GPSFake {
        let process = try ChildProcess(
            try Executables.find("gpsfake"),
            ["-q", "-n", "-W", "0", "-P", String(port), "-c", String(cycle), log.path], logFile: logFile)
        let fake = GPSFake(port: port, process: process)
        try await eventually("gpsfake's gpsd to serve on port \(port)", timeout: .seconds(20)) {
            guard process.isRunning else { throw TestEnvironmentError("gpsfake exited:\n\(process.log)") }
            return LoopbackTCP.greeting(port: port)?.contains("\"VERSION\"") ?? false
        }
        return fake
    }

    private init(port: UInt16, process: ChildProcess) {
        self.port = port
        self.process = process
    }

    /// Stops gpsfake and its gpsd, waiting on a thread of its own (see ``GPSDProcess/stop()``).
    public func stop() {
        let process = process
        let children = GPSFake.children(of: process.pid)
        process.signal(SIGTERM)
        Thread {
            process.stop(grace: 2)
            for child in children { Glibc.kill(child, SIGKILL) }
        }.start()
    }

    deinit { stop() }

    /// The processes whose parent is `pid`, from /proc.
    static func children(of pid: pid_t) -> [pid_t] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry -> pid_t? in
            guard let candidate = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // "pid (comm) state ppid ...": the parent is the second field after the command name.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == pid ? candidate : nil
        }
    }
}

// MARK: - A plain gpsd client

/// One JSON report from gpsd as a plain client saw it.
public struct GPSDReport: Sendable {
    /// Monotonic nanoseconds when the line arrived.
    public let receivedAt: Int64
    /// The JSON line.
    public let line: String
    /// The `class` member.
    public let classTag: String
    /// The numeric members.
    public let numbers: [String: Double]
    /// The string members.
    public let strings: [String: String]

    /// `time` in seconds since the Unix epoch, when the report has one.
    public var time: Double? { strings["time"].flatMap(GPSDReport.seconds(iso8601:)) }

    /// Parses gpsd's `YYYY-MM-DDTHH:MM:SS.sssZ`.
    public static func seconds(iso8601 text: String) -> Double? {
        let parts = text.split(whereSeparator: { "-T:Z".contains($0) })
        guard parts.count == 6, let year = Int32(parts[0]), let month = Int32(parts[1]), let day = Int32(parts[2]),
            let hour = Int32(parts[3]), let minute = Int32(parts[4]), let second = Double(parts[5])
        else { return nil }
        var fields = tm()
        fields.tm_year = year - 1900
        fields.tm_mon = month - 1
        fields.tm_mday = day
        fields.tm_hour = hour
        fields.tm_min = minute
        return Double(timegm(&fields)) + second
    }

    init?(line: String, receivedAt: Int64) {
        guard let data = line.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let classTag = object["class"] as? String
        else { return nil }
        var numbers: [String: Double] = [:]
        var strings: [String: String] = [:]
        for (key, value) in object {
            if let text = value as? String {
                strings[key] = text
            } else if let number = value as? NSNumber {
                numbers[key] = number.doubleValue
            }
        }
        self.receivedAt = receivedAt
        self.line = line
        self.classTag = classTag
        self.numbers = numbers
        self.strings = strings
    }
}

/// A plain gpsd client over TCP (no libgps): it sends `?WATCH` and records every report with its arrival time,
/// so tests can compare what the daemon serves with what gpsd said.
public final class GPSDWatcher: Sendable {
    private struct State {
        var reports: [GPSDReport] = []
        var disconnected = false
        var stopRequested = false
    }

    private let state = Mutex(State())

    /// Connects to gpsd on 127.0.0.1:`port` and starts watching.
    public init(port: UInt16) throws {
        guard let fd = LoopbackTCP.connect(port: port) else {
            throw TestEnvironmentError("cannot connect to gpsd on port \(port)")
        }
        let command = Array("?WATCH={\"enable\":true,\"json\":true};\n".utf8)
        _ = command.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let thread = Thread { [self] in run(fd) }
        thread.start()
    }

    /// Every report so far.
    public var reports: [GPSDReport] { state.withLock { $0.reports } }
    /// The TPV reports with a fix (mode 2 or 3) so far.
    public var fixes: [GPSDReport] { reports.filter { $0.classTag == "TPV" && ($0.numbers["mode"] ?? 0) >= 2 } }
    /// True once gpsd closed the connection.
    public var disconnected: Bool { state.withLock { $0.disconnected } }

    /// Waits until gpsd has sent a fix with a time, `after` the given monotonic time if set; returns it.
    @concurrent
    public func timedFix(after: Int64 = 0, timeout: Duration = .seconds(10)) async throws -> GPSDReport {
        let found = Shared<GPSDReport?>(nil)
        try await eventually("gpsd to report a fix with a time", timeout: timeout) { [self] in
            found.value = fixes.first { $0.receivedAt > after && $0.time != nil }
            return found.value != nil
        }
        return found.value!
    }

    /// Stops watching, within 20 ms.
    public func close() { state.withLock { $0.stopRequested = true } }

    private func run(_ fd: Int32) {
        defer { Glibc.close(fd) }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !state.withLock({ $0.stopRequested }) {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 20) > 0 else { continue }
            let count = recv(fd, &buffer, buffer.count, 0)
            let now = monotonicNanoseconds()
            guard count > 0 else {
                if count == 0 || (errno != EINTR && errno != EAGAIN) {
                    state.withLock { $0.disconnected = true }
                    return
                }
                continue
            }
            pending += buffer[0..<count]
            var parsed: [GPSDReport] = []
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                if let report = GPSDReport(line: line.trimmingCharacters(in: .whitespacesAndNewlines), receivedAt: now)
                {
                    parsed.append(report)
                }
            }
            if !parsed.isEmpty { state.withLock { $0.reports += parsed } }
        }
    }
}

// MARK: - Feeding a pty

/// A thread writing one NMEA epoch to a pseudo-terminal every `interval`, recording when each went out.
public final class NMEAFeeder: Sendable {
    /// One epoch written.
    public struct Write: Sendable {
        /// Its index, from 0.
        public let index: Int
        /// Monotonic nanoseconds just before the write.
        public let writtenAt: Int64
        /// What was written.
        public let epoch: NMEAEpoch
    }

    private struct State {
        var writes: [Write] = []
        var stopRequested = false
        var running = false
    }

    private let terminal: ReceiverTerminal
    private let interval: Duration
    private let makeEpoch: @Sendable (_ index: Int, _ wallTime: Double) -> NMEAEpoch
    private let state = Mutex(State())

    /// `epoch` makes the epoch to write from its index and the wall time (seconds, hundredths) of the write.
    public init(
        terminal: ReceiverTerminal, interval: Duration,
        epoch: @escaping @Sendable (_ index: Int, _ wallTime: Double) -> NMEAEpoch
    ) {
        self.terminal = terminal
        self.interval = interval
        makeEpoch = epoch
    }

    /// Starts writing, the first epoch at once.
    public func start() {
        let start = state.withLock { state -> Bool in
            guard !state.running else { return false }
            state.running = true
            state.stopRequested = false
            return true
        }
        guard start else { return }
        Thread { [self] in run() }.start()
    }

    /// Stops writing, within 20 ms.
    public func stop() { state.withLock { $0.stopRequested = true } }

    /// Waits until the thread has ended after ``stop()``.
    @concurrent
    public func stopped() async {
        while state.withLock({ $0.running }) { try? await Task.sleep(for: .milliseconds(2)) }
    }

    /// The epochs written so far.
    public var writes: [Write] { state.withLock { $0.writes } }

    private func run() {
        defer { state.withLock { $0.running = false } }
        let step = interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000
        var next = monotonicNanoseconds()
        while true {
            // Sleep in short slices until the next epoch is due, so that stop() is honoured quickly.
            while true {
                if state.withLock({ $0.stopRequested }) { return }
                let remaining = next - monotonicNanoseconds()
                if remaining <= 0 { break }
                var pause = timespec(tv_sec: 0, tv_nsec: Int(min(remaining, 20_000_000)))
                nanosleep(&pause, nil)
            }
            let index = state.withLock { $0.writes.count }
            let epoch = makeEpoch(index, NMEA.wallNow())
            let writtenAt = terminal.write(epoch.text)
            state.withLock { $0.writes.append(Write(index: index, writtenAt: writtenAt, epoch: epoch)) }
            // A late thread (a loaded machine) skips ahead rather than writing a burst.
            next = max(next + step, monotonicNanoseconds())
        }
    }
}

// MARK: - Statistics

/// Order statistics for the benchmark figures.
public enum Percentile {
    /// The `p`-th percentile (0...100) of `values` by the nearest-rank method; nil when empty.
    public static func of(_ values: [Double], _ p: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }
}
