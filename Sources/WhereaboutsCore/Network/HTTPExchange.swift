/// One HTTP POST, as a network positioning provider asks it of an ``HTTPTransport``.
public struct HTTPRequest: Sendable, Equatable {
    /// An `http://` or `https://` URL.
    public var url: String
    /// The request body.
    public var body: [UInt8]
    /// The `Content-Type` header.
    public var contentType: String
    /// Further headers, such as `X-Nickname`, in order.
    public var headers: [HTTPHeader]
    /// How long connecting, sending and receiving may take in all.
    public var timeout: Duration
    /// The largest response body accepted; a longer one fails the exchange with ``HTTPFailure/tooLarge(_:)``.
    public var maximumResponseBytes: Int

    public init(
        url: String, body: [UInt8], contentType: String = "application/json", headers: [HTTPHeader] = [],
        timeout: Duration = .seconds(20), maximumResponseBytes: Int = 64 << 10
    ) {
        self.url = url
        self.body = body
        self.contentType = contentType
        self.headers = headers
        self.timeout = timeout
        self.maximumResponseBytes = maximumResponseBytes
    }
}

/// A request header.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// What the server answered: any status, with the body as received.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var body: [UInt8]
    /// The response's headers, in order: a GET's (``HTTPDownloader``); a POST's are not read and none are given.
    public var headers: [HTTPHeader]
    public init(status: Int, body: [UInt8], headers: [HTTPHeader] = []) {
        self.status = status
        self.body = body
        self.headers = headers
    }
}

/// Why an exchange produced no response at all.
public enum HTTPFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The host name did not resolve.
    case unresolvable(String)
    /// Nothing accepted the connection, or the network is unreachable.
    case unreachable(String)
    /// The exchange took longer than the request's timeout.
    case timedOut(String)
    /// TLS failed: the certificate did not verify, or the handshake broke.
    case tls(String)
    /// The response body exceeded the limit, in bytes.
    case tooLarge(Int)
    /// The HTTP library could not be loaded.
    case unavailable(String)
    /// Anything else the transfer reported.
    case other(String)

    public var description: String {
        switch self {
        case .unresolvable(let why): "cannot resolve the host: \(why)"
        case .unreachable(let why): "cannot connect: \(why)"
        case .timedOut(let why): "timed out: \(why)"
        case .tls(let why): "TLS failed: \(why)"
        case .tooLarge(let limit): "the answer is larger than \(limit) bytes"
        case .unavailable(let why): "no HTTP library: \(why)"
        case .other(let why): why
        }
    }
}

/// Sends HTTP requests without blocking its caller: the daemon's is libcurl on a thread of its own, loaded at the
/// first request; tests may pass their own.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the response, or why there is none. Never throws, never blocks the caller's
    /// thread, and returns within the request's timeout.
    func post(_ request: HTTPRequest) async -> Result<HTTPResponse, HTTPFailure>
}

/// Downloads files with anonymous GETs without blocking its caller: the daemon's is libcurl on a thread of its own,
/// loaded at the first request; tests may pass their own.
public protocol HTTPDownloader: Sendable {
    /// GETs `url` with no header beyond the User-Agent and returns the response with its headers, or why there is
    /// none; the whole exchange takes at most `timeout`, and a body over `maximumResponseBytes` fails it with
    /// ``HTTPFailure/tooLarge(_:)``. Never throws, never blocks the caller's thread.
    func get(_ url: String, timeout: Duration, maximumResponseBytes: Int) async -> Result<HTTPResponse, HTTPFailure>
}
