import Loop

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

/// Opens an ``NMEAEndpoint`` without blocking: sockets are connected in non-blocking mode (a TCP connect that
/// takes a while is waited for by the stream), devices opened non-blocking and set to raw mode.
struct NMEAEndpointOpener: StreamOpener {
    let endpoint: NMEAEndpoint

    func open(_ completion: @escaping @BusActor @Sendable (StreamOpening) -> Void) {
        switch endpoint {
        case .unixSocket(let path): completion(Self.connectUnix(path))
        case .device(let path, let baud): completion(Self.openDevice(path, baud: baud))
        case .tcp(let host, let port): completion(Self.connectTCP(host, port))
        }
    }

    private static func connectUnix(_ path: String) -> StreamOpening {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return .failed("path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        return connect(family: AF_UNIX, to: address)
    }

    private static func connectTCP(_ host: String, _ port: UInt16) -> StreamOpening {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        let literal = host == "localhost" ? "127.0.0.1" : host
        guard inet_pton(AF_INET, literal, &address.sin_addr) == 1 else {
            return .failed("tcp-host must be an IPv4 address or localhost, not \(host)")
        }
        return connect(family: AF_INET, to: address)
    }

    /// A non-blocking stream socket of `family` connected, or connecting, to `address` (a `sockaddr_un` or
    /// `sockaddr_in`).
    private static func connect<Address>(family: Int32, to address: Address) -> StreamOpening {
        let fd = socket(
            family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failed(reason("socket", errno)) }
        var address = address
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<Address>.size))
            }
        }
        let failure = errno
        if result == 0 { return .opened(StreamConnection(descriptor: fd)) }
        if failure == EINPROGRESS { return .connecting(StreamConnection(descriptor: fd)) }
        Glibc.close(fd)
        return .failed(reason("connect", failure))
    }

    private static func openDevice(_ path: String, baud: UInt32?) -> StreamOpening {
        let fd = Glibc.open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return .failed(reason("open", errno)) }
        var settings = termios()
        if tcgetattr(fd, &settings) == 0 {
            cfmakeraw(&settings)
            if let baud { cfsetspeed(&settings, speed(baud)) }
            tcsetattr(fd, TCSANOW, &settings)
        }
        return .opened(StreamConnection(descriptor: fd))
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

    /// A failed call's line for the log: `connect: No such file or directory`.
    private static func reason(_ call: String, _ failure: Int32) -> String {
        "\(call): \(String(cString: strerror(failure)))"
    }
}
