import Foundation
import Glibc
import HTTP
import TestBasics
import TestSupport
import Testing
import WhereaboutsCore

/// CurlTransport against the loopback Ichnaea server, over HTTP and HTTPS, and against servers that answer badly
/// or not at all.
@Suite("HTTP POST through libcurl", .timeLimit(.minutes(2)))
struct CurlTransportTests {
    static let userAgent = "whereabouts-tests/1"
    static let query =
        #"{"considerIp":false,"wifiAccessPoints":[{"macAddress":"01:23:45:67:89:ab","signalStrength":-51}]}"#

    @Test func aGeolocationQueryIsAnsweredOverHTTP() async throws {
        let server = try IchnaeaServer(latitude: 48.8566, longitude: 2.3522, accuracy: 31.5)
        defer { server.stop() }
        let transport = CurlTransport(userAgent: Self.userAgent)
        let result = await transport.post(
            HTTPRequest(url: server.url(), body: Array(Self.query.utf8), headers: [HTTPHeader("X-Nickname", "kim")]))
        let response = try result.get()
        #expect(response.status == 200)
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        let location = try #require(answer["location"] as? [String: Double])
        #expect(location["lat"] == 48.8566)
        #expect(location["lng"] == 2.3522)
        #expect(answer["accuracy"] as? Double == 31.5)
        let requests = try server.requests
        #expect(requests.count == 1)
        let request = try #require(requests.first)
        #expect(request.method == "POST")
        #expect(request.path == IchnaeaServer.geolocatePath)
        #expect(request.bodyText == Self.query)
        #expect(request.header("Content-Type") == "application/json")
        #expect(request.header("User-Agent") == Self.userAgent)
        #expect(request.header("X-Nickname") == "kim")
        #expect(request.header("Content-Length") == String(Self.query.utf8.count))
    }

    @Test func theLocationChangesAtRuntime() async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        try server.setLocation(latitude: -33.8688, longitude: 151.2093, accuracy: 1200)
        let response = try await CurlTransport(userAgent: Self.userAgent)
            .post(HTTPRequest(url: server.url(), body: Array(Self.query.utf8))).get()
        #expect(response.status == 200)
        #expect(
            String(decoding: response.body, as: UTF8.self)
                == #"{"location": {"lat": -33.8688, "lng": 151.2093}, "accuracy": 1200}"#)
    }

    @Test func aGeolocationQueryIsAnsweredOverHTTPSTrustingTheTestAuthority() async throws {
        let authority = try TestCertificateAuthority.make()
        defer { authority.remove() }
        let server = try IchnaeaServer(certificates: authority)
        defer { server.stop() }
        let transport = CurlTransport(userAgent: Self.userAgent, caFile: authority.certificateFile.path)
        for host in ["127.0.0.1", "localhost"] {
            let response = try await transport.post(
                HTTPRequest(url: server.url(host: host), body: Array(Self.query.utf8))
            ).get()
            #expect(response.status == 200, "through \(host)")
            #expect(String(decoding: response.body, as: UTF8.self).contains(#""lat": 52.52"#), "through \(host)")
        }
        #expect(try server.requests.map(\.bodyText) == [Self.query, Self.query])
    }

    @Test func httpsFailsAsTLSWithTheSystemsAuthorities() async throws {
        let authority = try TestCertificateAuthority.make()
        defer { authority.remove() }
        let server = try IchnaeaServer(certificates: authority)
        defer { server.stop() }
        let result = await CurlTransport(userAgent: Self.userAgent)
            .post(HTTPRequest(url: server.url(), body: Array(Self.query.utf8)))
        #expect(failureKind(result) == "tls", "\(result)")
        #expect(try server.requests.isEmpty)
    }

    @Test func httpsFailsAsTLSForACertificateOfAnotherName() async throws {
        let authority = try TestCertificateAuthority.make(serverNames: ["elsewhere.test"])
        defer { authority.remove() }
        let server = try IchnaeaServer(certificates: authority)
        defer { server.stop() }
        let result = await CurlTransport(userAgent: Self.userAgent, caFile: authority.certificateFile.path)
            .post(HTTPRequest(url: server.url(), body: Array(Self.query.utf8)))
        #expect(failureKind(result) == "tls", "\(result)")
        #expect(try server.requests.isEmpty)
    }

    @Test func httpsFailsAsTLSWhenTheCAFileIsMissing() async throws {
        let authority = try TestCertificateAuthority.make()
        defer { authority.remove() }
        let server = try IchnaeaServer(certificates: authority)
        defer { server.stop() }
        let missing = authority.directory.appendingPathComponent("no-such-ca.pem").path
        let result = await CurlTransport(userAgent: Self.userAgent, caFile: missing)
            .post(HTTPRequest(url: server.url(), body: Array(Self.query.utf8)))
        #expect(failureKind(result) == "tls", "\(result)")
    }

    @Test func errorStatusesAndRedirectsAreResponses() async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        try server.setResponse(path: "/v1/geolocate", .answer(status: 404, body: IchnaeaServer.notFoundBody))
        try server.setResponse(path: "/broken", .answer(status: 500, body: "internal error"))
        try server.setResponse(
            path: "/moved", .answer(status: 302, body: "", headers: ["Location": server.url("/elsewhere")]))
        let transport = CurlTransport(userAgent: Self.userAgent)
        let body = Array(Self.query.utf8)
        let notFound = try await transport.post(HTTPRequest(url: server.url(), body: body)).get()
        #expect(notFound.status == 404)
        #expect(String(decoding: notFound.body, as: UTF8.self) == IchnaeaServer.notFoundBody)
        let broken = try await transport.post(HTTPRequest(url: server.url("/broken"), body: body)).get()
        #expect(broken == HTTPResponse(status: 500, body: Array("internal error".utf8)))
        let moved = try await transport.post(HTTPRequest(url: server.url("/moved"), body: body)).get()
        #expect(moved == HTTPResponse(status: 302, body: []))
        // The default answer to a body that is not JSON: Ichnaea's parse error.
        try server.removeResponse(path: "/v1/geolocate")
        let unparsable = try await transport.post(HTTPRequest(url: server.url(), body: Array("{".utf8))).get()
        #expect(unparsable.status == 400)
        #expect(String(decoding: unparsable.body, as: UTF8.self).contains("parseError"))
        // Ichnaea's answers to submissions.
        let submission = #"{"items":[{"timestamp":1700000000000,"position":{"latitude":1,"longitude":2}}]}"#
        let accepted = try await transport.post(
            HTTPRequest(url: server.url(IchnaeaServer.geosubmitPath), body: Array(submission.utf8))
        ).get()
        #expect(accepted == HTTPResponse(status: 200, body: Array("{}".utf8)))
        let refused = try await transport.post(
            HTTPRequest(url: server.url(IchnaeaServer.geosubmitPath), body: Array("{}".utf8))
        ).get()
        #expect(refused.status == 400)
        // No redirect was followed.
        #expect(
            try server.requests.map(\.path) == [
                "/v1/geolocate", "/broken", "/moved", "/v1/geolocate", "/v2/geosubmit", "/v2/geosubmit",
            ])
    }

    @Test func theBodyAndHeadersAreSentAsGiven() async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        try server.setResponse(path: "/echo", .answer(status: 204, body: ""))
        // Every byte value, long enough that libcurl would otherwise ask for "100 Continue".
        let body = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let headers = [
            HTTPHeader("X-Nickname", "Kim's laptop"), HTTPHeader("X-Empty", ""),
            HTTPHeader("Accept", "application/json"),
        ]
        let response = try await CurlTransport(userAgent: "agent with spaces/2.0 (Linux)")
            .post(
                HTTPRequest(
                    url: server.url("/echo?key=test"), body: body, contentType: "application/octet-stream",
                    headers: headers)
            ).get()
        #expect(response == HTTPResponse(status: 204, body: []))
        let request = try #require(try server.requests.first)
        #expect(request.path == "/echo?key=test")
        #expect(request.body == body)
        #expect(request.header("Content-Type") == "application/octet-stream")
        #expect(request.headers(named: "Content-Type").count == 1)
        #expect(request.header("Content-Length") == "200000")
        #expect(request.header("User-Agent") == "agent with spaces/2.0 (Linux)")
        #expect(request.header("X-Nickname") == "Kim's laptop")
        #expect(request.header("X-Empty") == "")
        #expect(request.headers(named: "Accept") == ["application/json"])
        #expect(request.header("Expect") == nil)
    }

    @Test func anEmptyBodyIsSentEmpty() async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        let response = try await CurlTransport(userAgent: Self.userAgent)
            .post(HTTPRequest(url: server.url(), body: [])).get()
        #expect(response.status == 200)
        let request = try #require(try server.requests.first)
        #expect(request.body.isEmpty)
        #expect(request.header("Content-Length") == "0")
    }

    @Test func aServerThatNeverAnswersTimesOut() async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        try server.setResponse(path: "/v1/geolocate", .hang)
        let started = ContinuousClock.now
        let result = await CurlTransport(userAgent: Self.userAgent)
            .post(HTTPRequest(url: server.url(), body: Array(Self.query.utf8), timeout: .seconds(1)))
        #expect(failureKind(result) == "timedOut", "\(result)")
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(try server.requests.count == 1)
    }

    @Test func aRefusedConnectionIsUnreachable() async throws {
        let port = try ReservedPort()
        defer { port.close() }
        let result = await CurlTransport(userAgent: Self.userAgent)
            .post(HTTPRequest(url: "http://127.0.0.1:\(port.number)/v1/geolocate", body: Array(Self.query.utf8)))
        #expect(failureKind(result) == "unreachable", "\(result)")
    }

    @Test func anUnknownHostIsUnresolvable() async throws {
        let result = await CurlTransport(userAgent: Self.userAgent)
            .post(HTTPRequest(url: "http://nonexistent.invalid/v1/geolocate", body: Array(Self.query.utf8)))
        #expect(failureKind(result) == "unresolvable", "\(result)")
    }

    @Test(arguments: [false, true])
    func aBodyOverTheLimitIsTooLarge(declaresLength: Bool) async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        try server.setResponse(path: "/huge", .huge(bytes: 10 << 20, declaresLength: declaresLength))
        let result = await CurlTransport(userAgent: Self.userAgent)
            .post(HTTPRequest(url: server.url("/huge"), body: [], maximumResponseBytes: 64 << 10))
        #expect(result == .failure(.tooLarge(64 << 10)))
    }

    @Test(arguments: [false, true])
    func aBodyOfExactlyTheLimitIsAccepted(declaresLength: Bool) async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        try server.setResponse(path: "/limit", .huge(bytes: 64 << 10, declaresLength: declaresLength))
        try server.setResponse(path: "/over", .huge(bytes: (64 << 10) + 1, declaresLength: declaresLength))
        let transport = CurlTransport(userAgent: Self.userAgent)
        let response = try await transport.post(
            HTTPRequest(url: server.url("/limit"), body: [], maximumResponseBytes: 64 << 10)
        ).get()
        #expect(response.status == 200)
        #expect(response.body == [UInt8](repeating: UInt8(ascii: "x"), count: 64 << 10))
        let over = await transport.post(
            HTTPRequest(url: server.url("/over"), body: [], maximumResponseBytes: 64 << 10))
        #expect(over == .failure(.tooLarge(64 << 10)))
    }

    @Test func aDroppedConnectionFails() async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        try server.setResponse(path: "/v1/geolocate", .close)
        let result = await CurlTransport(userAgent: Self.userAgent)
            .post(HTTPRequest(url: server.url(), body: Array(Self.query.utf8)))
        #expect(failureKind(result) == "other", "\(result)")
        #expect(try server.requests.count == 1)
    }

    @Test func onlyHTTPAndHTTPSAreSpoken() async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        let transport = CurlTransport(userAgent: Self.userAgent)
        for url in ["file:///etc/hostname", "ftp://127.0.0.1:\(server.port)/", "gopher://127.0.0.1:\(server.port)/"] {
            let result = await transport.post(HTTPRequest(url: url, body: Array(Self.query.utf8)))
            #expect(failureKind(result) == "other", "\(url): \(result)")
        }
        #expect(try server.requests.isEmpty)
    }

    @Test func lineBreaksInHeadersOrTheURLAreRefusedBeforeSending() async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        let body = Array(Self.query.utf8)
        let requests = [
            HTTPRequest(url: server.url(), body: body, headers: [HTTPHeader("X-Nickname", "kim\r\nX-Injected: 1")]),
            HTTPRequest(url: server.url(), body: body, headers: [HTTPHeader("X-Nick\nname", "kim")]),
            HTTPRequest(url: server.url(), body: body, headers: [HTTPHeader("X-Nickname:", "kim")]),
            HTTPRequest(url: server.url(), body: body, headers: [HTTPHeader("", "kim")]),
            HTTPRequest(url: server.url(), body: body, contentType: "application/json\r\nX-Injected: 1"),
            HTTPRequest(url: server.url() + "\r\nX-Injected: 1", body: body),
            HTTPRequest(url: server.url() + "\0", body: body),
        ]
        let transport = CurlTransport(userAgent: Self.userAgent)
        for request in requests {
            let result = await transport.post(request)
            #expect(failureKind(result) == "other", "\(request): \(result)")
        }
        let badAgent = await CurlTransport(userAgent: "agent\r\nX-Injected: 1")
            .post(HTTPRequest(url: server.url(), body: body))
        #expect(failureKind(badAgent) == "other", "\(badAgent)")
        #expect(try server.requests.isEmpty)
    }

    @Test func aHungRequestHoldsUpNeitherItsCallerNorAnotherTransport() async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        try server.setResponse(path: "/hang", .hang)
        let hung = CurlTransport(userAgent: Self.userAgent)
        let waiting = Task {
            await hung.post(HTTPRequest(url: server.url("/hang"), body: [], timeout: .seconds(60)))
        }
        try await waitUntil("the hung request to reach the server") { try server.requests.count == 1 }
        let started = ContinuousClock.now
        let other = try await CurlTransport(userAgent: Self.userAgent)
            .post(HTTPRequest(url: server.url(), body: Array(Self.query.utf8))).get()
        #expect(other.status == 200)
        #expect(ContinuousClock.now - started < .seconds(10))
        // Cancelling abandons the request being sent.
        waiting.cancel()
        let result = await waiting.value
        #expect(result == .failure(.other("cancelled")))
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test func aRequestQueuedBehindAHungOneTimesOutInItsOwnTime() async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        try server.setResponse(path: "/hang", .hang)
        let transport = CurlTransport(userAgent: Self.userAgent)
        let hung = Task { await transport.post(HTTPRequest(url: server.url("/hang"), body: [], timeout: .seconds(60))) }
        try await waitUntil("the hung request to reach the server") { try server.requests.count == 1 }
        let started = ContinuousClock.now
        let queued = await transport.post(
            HTTPRequest(url: server.url(), body: Array(Self.query.utf8), timeout: .milliseconds(300)))
        #expect(failureKind(queued) == "timedOut", "\(queued)")
        #expect(ContinuousClock.now - started < .seconds(20))
        #expect(try server.requests.count == 1, "the queued request was not sent")
        hung.cancel()
        #expect(await hung.value == .failure(.other("cancelled")))
        let zero = await transport.post(HTTPRequest(url: server.url(), body: [], timeout: .zero))
        #expect(failureKind(zero) == "timedOut", "\(zero)")
        #expect(try server.requests.count == 1, "a request without time is not sent")
    }

    @Test func requestsBeyondTheLimitFailAtOnceAndQueuedOnesAreCancelled() async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        try server.setResponse(path: "/hang", .hang)
        let transport = CurlTransport(userAgent: Self.userAgent)
        let finished = Finished()
        let total = CurlTransport.maximumRequestsInFlight + 4
        let tasks = (0..<total).map { _ in
            Task {
                let result = await transport.post(
                    HTTPRequest(url: server.url("/hang"), body: [], timeout: .seconds(60)))
                finished.append(result)
            }
        }
        // Nothing the transport accepted can end before it is cancelled: every request beyond the limit, and
        // only those, have failed.
        try await waitUntil("4 requests to be refused and 1 sent") {
            try finished.results.count >= 4 && server.requests.count >= 1
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(finished.results == Array(repeating: .failure(.other("too many requests in flight")), count: 4))
        #expect(try server.requests.count == 1, "one request is sent at a time")
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        let results = finished.results
        #expect(results.count == total)
        #expect(results.dropFirst(4).allSatisfy { $0 == .failure(.other("cancelled")) }, "\(results)")
        #expect(try server.requests.count == 1, "cancelled requests are not sent")
        // The transport takes requests again.
        try server.setResponse(path: "/hang", .answer(status: 200, body: "done"))
        let after = try await transport.post(HTTPRequest(url: server.url("/hang"), body: [])).get()
        #expect(after == HTTPResponse(status: 200, body: Array("done".utf8)))
    }

    @Test func aRequestCancelledBeforeItIsSentFailsWithoutSending() async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        let transport = CurlTransport(userAgent: Self.userAgent)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await transport.post(HTTPRequest(url: server.url(), body: Array(Self.query.utf8)))
        }
        #expect(await task.value == .failure(.other("cancelled")))
        #expect(try server.requests.isEmpty)
    }
}

/// Results as tasks finish.
final class Finished: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [Result<HTTPResponse, HTTPFailure>] = []

    func append(_ result: Result<HTTPResponse, HTTPFailure>) { lock.withLock { list.append(result) } }
    var results: [Result<HTTPResponse, HTTPFailure>] { lock.withLock { list } }
}

/// The case of a failure, without its message, or nil for a response.
func failureKind(_ result: Result<HTTPResponse, HTTPFailure>) -> String? {
    guard case .failure(let failure) = result else { return nil }
    return switch failure {
    case .unresolvable: "unresolvable"
    case .unreachable: "unreachable"
    case .timedOut: "timedOut"
    case .tls: "tls"
    case .tooLarge: "tooLarge"
    case .unavailable: "unavailable"
    case .other: "other"
    }
}

/// Polls `condition` every 20 ms, without blocking a thread of the test's executor, for up to `timeout`.
func waitUntil(_ what: String, timeout: Duration = .seconds(60), _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw TestEnvironmentError("timed out after \(timeout) waiting for \(what)")
}

/// A loopback TCP port bound but not listening, so a connection to it is refused and no other socket takes it.
struct ReservedPort {
    let descriptor: Int32
    let number: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestEnvironmentError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(descriptor)
            throw TestEnvironmentError("cannot bind a loopback port: errno \(errno)")
        }
        self.descriptor = descriptor
        number = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { Glibc.close(descriptor) }
}
