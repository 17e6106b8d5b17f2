import Glibc
import Loop
import LoopScheduling
import TestBasics
import TestSupport
import Testing
import WhereaboutsCore
import WhereaboutsProviders

@testable import GPSD

/// Keeps the provider's log lines with the test's other events.
private struct RecordingLogger: Logger {
    let recorder: EventRecorder
    func log(_ priority: LogPriority, _ message: String) { recorder.record("log: \(message)") }
}

/// A listening loopback socket standing in for gpsd, and its port.
private func loopbackListener() throws -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    try #require(bound)
    return (fd, UInt16(bigEndian: address.sin_port))
}

/// The connection the provider makes to `listener`, accepted off the bus thread.
@concurrent
private func acceptConnection(_ listener: Int32) async throws -> Int32 {
    var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
    try #require(poll(&poller, 1, 20_000) == 1, "the provider did not connect")
    let peer = accept(listener, nil, nil)
    try #require(peer >= 0)
    return peer
}

/// What the provider sent on `peer`, read off the bus thread up to its `?POLL;`.
@concurrent
private func commands(from peer: Int32) async throws -> String {
    var received: [UInt8] = []
    while !String(decoding: received, as: UTF8.self).contains("?POLL;") {
        var poller = pollfd(fd: peer, events: Int16(POLLIN), revents: 0)
        try #require(poll(&poller, 1, 20_000) == 1, "no ?POLL; came: \(String(decoding: received, as: UTF8.self))")
        var chunk = [UInt8](repeating: 0, count: 512)
        let count = read(peer, &chunk, chunk.count)
        try #require(count > 0)
        received += chunk[0..<count]
    }
    return String(decoding: received, as: UTF8.self)
}

/// Writes `text` to `peer` off the bus thread, which reads the other end.
@concurrent
private func send(_ text: String, to peer: Int32) async {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(peer, $0.baseAddress, $0.count) }
        guard written > 0 else { break }
        offset += written
    }
    #expect(offset == bytes.count)
}

@Suite("The gpsd provider against a stand-in gpsd", .timeLimit(.minutes(1)))
@BusActor
struct GPSDProviderTests {
    static let version = #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"#
    static let nextTPV =
        #"{"class":"TPV","device":"/dev/pts/1","mode":2,"time":"2026-11-30T17:14:56.000Z","lat":46.75,"lon":7.25}"#

    let clock = ManualClock()
    let recorder = EventRecorder()

    private func provider(port: UInt16) -> GPSDProvider {
        let provider = GPSDProvider(
            host: "127.0.0.1", port: port, client: LibGPSClient(), clock: clock, timers: clock, watches: EventLoop.main,
            logger: RecordingLogger(recorder: recorder))
        let recorder = recorder
        provider.onAvailabilityChanged = { [unowned provider] in
            recorder.record("available \(provider.availableLevel)")
        }
        provider.onFix = { recorder.record("fix \($0.latitude),\($0.longitude)") }
        return provider
    }

    @Test func theCommandsAreSentTheReportsReadAndTheEndOfTheStreamSeen() async throws {
        let server = try loopbackListener()
        defer { close(server.fd) }
        let provider = provider(port: server.port)
        provider.start()
        let peer = try await acceptConnection(server.fd)
        let sent = try await commands(from: peer)
        let watch = try #require(sent.firstRange(of: #"?WATCH={"enable":true,"json":true"#), "\(sent)")
        #expect(sent.firstRange(of: "?POLL;").map { $0.lowerBound > watch.lowerBound } == true, "\(sent)")

        // Up once gpsd speaks; reports that would hang libgps and an over-long line are passed over.
        await send(Self.version + "\n", to: peer)
        let connected = "log: gpsd: connected to 127.0.0.1:\(server.port)"
        try await recorder.wait(for: connected)
        let reports = [
            ReportFramingTests.libgpsLoop, ReportFramingTests.libgpsLoopOnValidJSON,
            String(repeating: "x", count: 40_000), ReportFramingTests.tpv, ReportFramingTests.tpv, Self.nextTPV,
        ]
        await send(reports.joined(separator: "\r\n") + "\r\n", to: peer)
        try await recorder.wait(for: "fix 46.75,7.25")
        #expect(recorder.events == [connected, "fix 46.5,7.25", "fix 46.75,7.25"], "a repeated report is dropped")

        close(peer)
        try await recorder.wait(for: "available none")
        let ended = "log: gpsd: 127.0.0.1:\(server.port): the stream ended; reconnecting"
        #expect(recorder.events.suffix(2) == [ended, "available none"])
        #expect(clock.armedTimers == 1)
        provider.stop()
        #expect(clock.armedTimers == 0)
    }

    @Test func onlyAConnectionThatGaveAFixStartsThePausesOver() async throws {
        let server = try loopbackListener()
        defer { close(server.fd) }
        let provider = provider(port: server.port)
        /// Takes the provider's next connection, on which gpsd says hello and sends `reports` (ReportFramingTests.tpv or nothing),
        /// then hangs up; returns once the provider has seen the end.
        func serveAndHangUp(_ reports: [String] = []) async throws {
            let peer = try await acceptConnection(server.fd)
            _ = try await commands(from: peer)
            let ends = recorder.events.count { $0 == "available none" }
            let fixes = recorder.events.count { $0 == "fix 46.5,7.25" }
            await send(([Self.version] + reports).map { $0 + "\n" }.joined(), to: peer)
            try await recorder.wait(for: "log: gpsd: connected to 127.0.0.1:\(server.port)", count: ends + 1)
            if !reports.isEmpty { try await recorder.wait(for: "fix 46.5,7.25", count: fixes + 1) }
            close(peer)
            try await recorder.wait(for: "available none", count: ends + 1)
        }
        /// Checks that the next attempt is `pause` away, and lets it be made.
        func expectNextAttempt(after pause: Duration) {
            #expect(clock.armedTimers == 1)
            clock.advance(by: pause - .milliseconds(1))
            #expect(clock.armedTimers == 1, "the attempt is not due before \(pause)")
            clock.advance(by: .milliseconds(1))
            #expect(clock.armedTimers == 0, "the attempt is due at \(pause)")
        }

        provider.start()
        try await serveAndHangUp()
        expectNextAttempt(after: .milliseconds(250))
        // gpsd spoke but gave no fix: the pauses go on growing, as after a refusal.
        try await serveAndHangUp()
        expectNextAttempt(after: .milliseconds(500))
        // A fix starts them over.
        try await serveAndHangUp([ReportFramingTests.tpv])
        expectNextAttempt(after: .milliseconds(250))
        try await serveAndHangUp()
        expectNextAttempt(after: .milliseconds(500))

        // Stopped once connected, so that no command is left to write to a connection the test has closed.
        let last = try await acceptConnection(server.fd)
        _ = try await commands(from: last)
        provider.stop()
        close(last)
        #expect(clock.armedTimers == 0)
    }

    @Test func aRefusedConnectionMakesGPSDUnavailableAndIsRetried() async throws {
        let closed = try loopbackListener()
        close(closed.fd)
        let provider = provider(port: closed.port)
        provider.start()
        try await recorder.wait(for: "available none")
        let logged = try #require(recorder.events.first)
        #expect(logged.hasPrefix("log: gpsd: 127.0.0.1:\(closed.port): ") && logged.hasSuffix("; reconnecting"))
        #expect(recorder.events.count == 2)
        #expect(clock.armedTimers == 1)
        provider.stop()
        #expect(clock.armedTimers == 0)
    }
}
