import Foundation
import TestBasics

/// `Tests/StandIns/ichnaea_server.py`: a loopback stand-in for an Ichnaea geolocation server, over HTTP or HTTPS,
/// that records every request and answers as the test says.
///
/// By default a POST to ``geolocatePath`` is answered as Ichnaea does, with 200 and
/// `{"location":{"lat":…,"lng":…},"accuracy":…}` (``setLocation(latitude:longitude:accuracy:)`` changes it), or
/// with 400 and Ichnaea's parse error when the body is not a JSON object; a POST to ``geosubmitPath`` with 200 and
/// `{}`, or the parse error when the body is not a JSON object with an `items` list; any other request gets a 404.
/// ``setResponse(path:_:)`` overrides a path: any status, headers and body (a predicted-orbit file, for instance),
/// an answer that never comes, a huge body, a body cut off, or a connection dropped without an answer. Changes apply
/// from the next request on.
public final class IchnaeaServer: @unchecked Sendable {
    /// Debian's Python, which the server needs nothing beyond.
    public static let python = URL(fileURLWithPath: "/usr/bin/python3")
    /// The server's script.
    public static let script = ProjectPaths.standIns.appendingPathComponent("ichnaea_server.py")
    /// Ichnaea's geolocation endpoint.
    public static let geolocatePath = "/v1/geolocate"
    /// Ichnaea's endpoint for contributed observations.
    public static let geosubmitPath = "/v2/geosubmit"
    /// The body of Ichnaea's 404 when it has no location for a query.
    public static let notFoundBody =
        #"{"error": {"errors": [{"domain": "geolocation", "reason": "notFound", "message": "Not found"}], "code": 404, "message": "Not found"}}"#

    /// A request as the server received it.
    public struct Request: Sendable, Equatable {
        /// The method, such as `POST`.
        public let method: String
        /// The path, with the query if there was one.
        public let path: String
        /// The headers, in the order received.
        public let headers: [Header]
        /// The body.
        public let body: [UInt8]

        /// The value of the first header named `name` (compared without case), or nil.
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        /// The values of every header named `name` (compared without case).
        public func headers(named name: String) -> [String] {
            headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
        }

        /// The body as UTF-8 text.
        public var bodyText: String { String(decoding: body, as: UTF8.self) }
    }

    /// A request header.
    public struct Header: Sendable, Equatable {
        /// The name, as the client spelled it.
        public let name: String
        /// The value.
        public let value: String
    }

    /// How the server answers requests to a path.
    public enum Response: Sendable, Equatable {
        /// `status` with `body` and, besides `Content-Length`, `headers`.
        case answer(status: Int, body: String, headers: [String: String] = [:])
        /// Never: the connection stays open, with no answer.
        case hang
        /// 200 with a body of `bytes` bytes, announced by `Content-Length` when `declaresLength`, otherwise ended
        /// by closing the connection.
        case huge(bytes: Int, declaresLength: Bool)
        /// None: the connection is dropped once the request has been read.
        case close
        /// 200 announcing a `Content-Length` of `declaredBytes`, but only `body` is sent before the connection is
        /// closed: a body cut off.
        case truncated(body: String, declaredBytes: Int)
    }

    /// Whether the server speaks HTTPS.
    public let isHTTPS: Bool
    /// The port on 127.0.0.1.
    public let port: Int
    /// The server's folder: its control file, request log and output.
    public let directory: URL
    /// The server's process.
    public let process: ChildProcess

    private let controlFile: URL
    private let requestLog: URL
    private let lock = NSLock()
    private var responses: [String: Response] = [:]
    private var location: (latitude: Double, longitude: Double, accuracy: Double)

    /// Starts the server, over HTTPS with `authority`'s server certificate when one is given, and returns once it
    /// accepts connections. Its geolocation answers carry `latitude`, `longitude` and `accuracy` until changed. A
    /// `launcher` (such as ``NetworkNamespace/launcher``) is run with the server's command appended, and must exec
    /// it.
    public init(
        certificates authority: TestCertificateAuthority? = nil, latitude: Double = 52.52, longitude: Double = 13.405,
        accuracy: Double = 25, launcher: [String] = []
    ) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python.path) else {
            throw TestEnvironmentError("\(Self.python.path) is not installed; install the python3 package")
        }
        guard FileManager.default.fileExists(atPath: Self.script.path) else {
            throw TestEnvironmentError("the test server \(Self.script.path) is missing")
        }
        let directory = try TemporaryDirectory.make(prefix: "whereabouts-ichnaea")
        self.directory = directory
        isHTTPS = authority != nil
        controlFile = directory.appendingPathComponent("control.json")
        requestLog = directory.appendingPathComponent("requests.jsonl")
        location = (latitude, longitude, accuracy)
        let portFile = directory.appendingPathComponent("port")
        var arguments = [
            Self.script.path, "--port-file", portFile.path, "--control", controlFile.path, "--log", requestLog.path,
            "--lat", String(latitude), "--lng", String(longitude), "--accuracy", String(accuracy),
        ]
        if let authority {
            arguments += ["--cert", authority.serverCertificateFile.path, "--key", authority.serverKeyFile.path]
        }
        let command = launcher + [Self.python.path] + arguments
        let process = try ChildProcess(
            URL(fileURLWithPath: command[0]), Array(command.dropFirst()),
            logFile: directory.appendingPathComponent("server.log"))
        self.process = process
        var port = 0
        do {
            try Wait.until("the Ichnaea test server to listen", timeout: 20) {
                if let text = try? String(contentsOf: portFile, encoding: .utf8),
                    let number = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
                {
                    port = number
                    return true
                }
                guard process.isRunning else {
                    throw TestEnvironmentError("the Ichnaea test server exited:\n\(process.log)")
                }
                return false
            }
        } catch {
            process.stop(grace: 1)
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        self.port = port
    }

    /// The URL of `path` on the server, through `host` (127.0.0.1 or localhost, both in the test certificate).
    public func url(_ path: String = geolocatePath, host: String = "127.0.0.1") -> String {
        "\(isHTTPS ? "https" : "http")://\(host):\(port)\(path)"
    }

    /// The geolocate queries received so far, in order: each request to ``geolocatePath`` with its JSON body.
    public func geolocateQueries() throws -> [(request: Request, body: [String: Any])] {
        try requests.filter { $0.path.hasPrefix(Self.geolocatePath) }.map { request in
            (request, try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] ?? [:])
        }
    }

    /// The `cellTowers` of a geolocate query's `body`, each value as text.
    public static func cellTowers(in body: [String: Any]) -> [[String: String]] {
        (body["cellTowers"] as? [[String: Any]] ?? []).map { $0.mapValues { "\($0)" } }
    }

    /// Every request received so far, in order.
    public var requests: [Request] {
        get throws {
            guard let data = FileManager.default.contents(atPath: requestLog.path) else { return [] }
            // Only whole lines: the server may be writing the last one.
            var lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            lines.removeLast()
            return try lines.filter { !$0.isEmpty }.map { line in
                guard let entry = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                    let method = entry["method"] as? String, let path = entry["path"] as? String,
                    let headers = entry["headers"] as? [[String]], let body = entry["body"] as? String,
                    let bytes = Data(base64Encoded: body)
                else { throw TestEnvironmentError("the Ichnaea test server logged an unreadable request: \(line)") }
                return Request(
                    method: method, path: path,
                    headers: try headers.map { pair in
                        guard pair.count == 2 else { throw TestEnvironmentError("a logged header is not a pair") }
                        return Header(name: pair[0], value: pair[1])
                    }, body: [UInt8](bytes))
            }
        }
    }

    /// Answers requests to `path` (without a query) as `response` says from now on.
    public func setResponse(path: String, _ response: Response) throws {
        try update { $0[path] = response }
    }

    /// Answers requests to `path` as by default again.
    public func removeResponse(path: String) throws {
        try update { $0[path] = nil }
    }

    /// The location of the default geolocation answer from now on.
    public func setLocation(latitude: Double, longitude: Double, accuracy: Double) throws {
        try lock.withLock {
            location = (latitude, longitude, accuracy)
            try writeControl()
        }
    }

    /// Stops the server (a request left hanging is dropped with it) and deletes its folder.
    public func stop() {
        process.stop(grace: 2)
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }

    private func update(_ change: (inout [String: Response]) -> Void) throws {
        try lock.withLock {
            change(&responses)
            try writeControl()
        }
    }

    /// Replaces the control file at once (written aside, then renamed), so the server never reads half of it.
    private func writeControl() throws {
        var answers: [String: Any] = [:]
        for (path, response) in responses {
            switch response {
            case .answer(let status, let body, let headers):
                answers[path] = ["mode": "respond", "status": status, "body": body, "headers": headers]
            case .hang: answers[path] = ["mode": "hang"]
            case .huge(let bytes, let declaresLength):
                answers[path] = ["mode": "huge", "bytes": bytes, "declare_length": declaresLength]
            case .close: answers[path] = ["mode": "close"]
            case .truncated(let body, let declaredBytes):
                answers[path] = ["mode": "truncate", "body": body, "declared": declaredBytes]
            }
        }
        let control: [String: Any] = [
            "location": ["lat": location.latitude, "lng": location.longitude, "accuracy": location.accuracy],
            "responses": answers,
        ]
        let data = try JSONSerialization.data(withJSONObject: control, options: [.sortedKeys])
        try data.write(to: controlFile, options: .atomic)
    }
}
