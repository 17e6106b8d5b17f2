import Foundation
import HTTP
import TestSupport
import Testing
import WhereaboutsCore

/// CurlTransport's GETs, as the predicted orbits are downloaded: the body and the response's headers, nothing
/// sent but the User-Agent, and the size limit.
@Suite("HTTP GET through libcurl", .timeLimit(.minutes(2)))
struct CurlDownloadTests {
    static let userAgent = "whereabouts-tests/1"

    @Test func aGETSendsNoBodyNorHeadersOfItsOwnAndReturnsTheResponsesHeaders() async throws {
        let authority = try TestCertificateAuthority.make()
        defer { authority.remove() }
        let server = try IchnaeaServer(certificates: authority)
        defer { server.stop() }
        try server.setResponse(
            path: "/xtra.bin",
            .answer(status: 200, body: "orbits", headers: ["Cache-Control": "max-age=3600", "Expires": "never "]))
        let transport = CurlTransport(userAgent: Self.userAgent, caFile: authority.certificateFile.path)
        let response = try await transport.get(
            server.url("/xtra.bin"), timeout: .seconds(10), maximumResponseBytes: 1 << 20
        ).get()
        #expect(response.status == 200)
        #expect(response.body == Array("orbits".utf8))
        #expect(response.headers.contains(HTTPHeader("Cache-Control", "max-age=3600")))
        #expect(response.headers.contains(HTTPHeader("Expires", "never")))
        #expect(response.headers.contains(HTTPHeader("Content-Length", "6")))
        let request = try #require(try server.requests.first)
        #expect(request.method == "GET")
        #expect(request.body.isEmpty)
        #expect(request.header("User-Agent") == Self.userAgent)
        #expect(request.header("Content-Type") == nil)
        #expect(request.header("Content-Length") == nil)
    }

    @Test func aBodyOverTheLimitOrCutOffFails() async throws {
        let server = try IchnaeaServer()
        defer { server.stop() }
        try server.setResponse(path: "/big", .huge(bytes: 200_000, declaresLength: false))
        try server.setResponse(path: "/cut", .truncated(body: "XTRA", declaredBytes: 1000))
        let transport = CurlTransport(userAgent: Self.userAgent)
        let big = await transport.get(server.url("/big"), timeout: .seconds(10), maximumResponseBytes: 100_000)
        #expect(big == .failure(.tooLarge(100_000)))
        let cut = await transport.get(server.url("/cut"), timeout: .seconds(10), maximumResponseBytes: 100_000)
        guard case .failure(.other) = cut else {
            Issue.record("a body cut off gave \(cut)")
            return
        }
    }
}
