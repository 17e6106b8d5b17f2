import Loop
import WhereaboutsCore

#if canImport(Glibc)
    import Glibc
#endif

/// Where an NMEA stream comes from.
public enum NMEAEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// A Unix stream socket the provider connects to (GeoClue 2.6's `nmea-socket`).
    case unixSocket(path: String)
    /// A serial device or pty, set to raw mode and, when given, to `baud`.
    case device(path: String, baud: UInt32?)
    /// A TCP server that streams sentences; the host must be an IP address or `localhost`.
    case tcp(host: String, port: UInt16)

    public var description: String {
        switch self {
        case .unixSocket(let path): "socket \(path)"
        case .device(let path, _): "device \(path)"
        case .tcp(let host, let port): "tcp \(host):\(port)"
        }
    }
}

/// NMEA 0183 from a socket, a serial device or pty, or TCP (`[network-nmea]`), read on the bus thread without
/// blocking it.
///
/// Bytes go through one ``NMEALineSplitter`` and ``NMEAFixAssembler`` (the parser the replay source shares), so an
/// epoch's sentences become one fix; garbage, partial and over-long lines are dropped and counted, never fatal.
/// The stream is opened only while started; when it ends or fails the provider is unavailable and reopens it
/// with backoff (0.25 s doubling to 8 s).
@BusActor
public final class NMEAStreamProvider: LocationProvider {
    public let kind = ProviderKind.nmea
    public let minimumClientLevel = AccuracyLevel.exact
    public var onFix: (@BusActor (Fix) -> Void)?
    public var onAvailabilityChanged: (@BusActor () -> Void)?

    private let endpoint: NMEAEndpoint
    private let clock: any WhereaboutsCore.Clock
    private let logger: any Logger
    private var fd: Int32 = -1
    private var watch: WatchID?
    private var retry: TimerID?
    private var backoff = 0.25
    private var started = false
    private var connected: Bool?
    private var splitter = NMEALineSplitter()
    private var assembler = NMEAFixAssembler(provider: .nmea)
    private var rejectedLines = 0

    public init(endpoint: NMEAEndpoint, clock: any WhereaboutsCore.Clock, logger: any Logger) {
        self.endpoint = endpoint
        self.clock = clock
        self.logger = logger
    }

    /// Exact until opening the stream has failed; then whatever the last attempt showed.
    public var availableLevel: AccuracyLevel { connected == false ? .none : .exact }

    public func start() {
        guard !started else { return }
        started = true
        backoff = 0.25
        open()
    }

    public func stop() {
        started = false
        if let retry { EventLoop.main.cancel(retry) }
        retry = nil
        close()
    }

    // MARK: Opening

    private func open() {
        retry = nil
        guard started else { return }
        splitter = NMEALineSplitter()
        assembler = NMEAFixAssembler(provider: .nmea)
        do {
            switch endpoint {
            case .unixSocket(let path): try connectUnix(path)
            case .device(let path, let baud): try openDevice(path, baud: baud)
            case .tcp(let host, let port): try connectTCP(host, port)
            }
        } catch {
            fail(error.reason)
        }
    }

    private func connectUnix(_ path: String) throws(StreamError) {
        fd = socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .errno("socket") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw StreamError("path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try finishConnect(result)
    }

    private func connectTCP(_ host: String, _ port: UInt16) throws(StreamError) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        let literal = host == "localhost" ? "127.0.0.1" : host
        guard inet_pton(AF_INET, literal, &address.sin_addr) == 1 else {
            throw StreamError("tcp-host must be an IPv4 address or localhost, not \(host)")
        }
        fd = socket(
            AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .errno("socket") }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try finishConnect(result)
    }

    /// Reads at once after a completed connect, or waits for an asynchronous one to finish.
    private func finishConnect(_ result: Int32) throws(StreamError) {
        if result == 0 { return startReading() }
        guard errno == EINPROGRESS else { throw .errno("connect") }
        watch = EventLoop.main.addWatch(fd: fd, events: .writable) { [weak self] _ in
            guard let self, let watch = self.watch else { return }
            EventLoop.main.removeWatch(watch)
            self.watch = nil
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(self.fd, SOL_SOCKET, SO_ERROR, &failure, &length)
            if failure == 0 {
                self.startReading()
            } else {
                self.fail("connect: \(String(cString: strerror(failure)))")
            }
        }
    }

    private func openDevice(_ path: String, baud: UInt32?) throws(StreamError) {
        fd = Glibc.open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .errno("open") }
        var settings = termios()
        if tcgetattr(fd, &settings) == 0 {
            cfmakeraw(&settings)
            if let baud { cfsetspeed(&settings, NMEAStreamProvider.speed(baud)) }
            tcsetattr(fd, TCSANOW, &settings)
        }
        startReading()
    }

    private static func speed(_ baud: UInt32) -> speed_t {
        switch baud {
        case 4800: speed_t(B4800)
        case 9600: speed_t(B9600)
        case 19200: speed_t(B19200)
        case 38400: speed_t(B38400)
        case 57600: speed_t(B57600)
        case 115200: speed_t(B115200)
        default: speed_t(B230400)
        }
    }

    // MARK: Reading

    private func startReading() {
        backoff = 0.25
        setConnected(true)
        logger.info("nmea: reading \(endpoint)")
        watch = EventLoop.main.addWatch(fd: fd, events: .readable) { [weak self] _ in self?.readAvailable() }
    }

    private func readAvailable() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while fd >= 0 {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                consume(buffer[0..<count])
                continue
            }
            if count < 0 && (errno == EAGAIN || errno == EINTR) { return }
            fail(count == 0 ? "the stream ended" : "read: \(String(cString: strerror(errno)))")
            return
        }
    }

    private func consume(_ bytes: ArraySlice<UInt8>) {
        assembler.fallbackDate = clock.wallNow
        for line in splitter.append(bytes) {
            do {
                if let fix = try assembler.add(line: line) { onFix?(fix) }
            } catch {
                rejectedLines += 1
                if rejectedLines == 1 || rejectedLines.isMultiple(of: 1000) {
                    logger.warning("nmea: \(endpoint): ignoring a bad sentence (\(error)); \(rejectedLines) so far")
                }
            }
        }
    }

    // MARK: Failing

    private func fail(_ reason: String) {
        close()
        if connected != false { logger.warning("nmea: \(endpoint): \(reason); retrying") }
        setConnected(false)
        guard started else { return }
        retry = EventLoop.main.schedule(after: .milliseconds(Int(backoff * 1000))) { [weak self] in self?.open() }
        backoff = min(backoff * 2, 8)
    }

    private func close() {
        if let watch { EventLoop.main.removeWatch(watch) }
        watch = nil
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    private func setConnected(_ value: Bool) {
        let before = availableLevel
        connected = value
        if availableLevel != before { onAvailabilityChanged?() }
    }
}

/// Why opening or reading a stream failed.
private struct StreamError: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
    static func errno(_ call: String) -> StreamError {
        StreamError("\(call): \(String(cString: strerror(Glibc.errno)))")
    }
}
