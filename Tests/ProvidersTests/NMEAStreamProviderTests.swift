import Glibc
import Loop
import LoopScheduling
import TestBasics
import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// Keeps the provider's log lines with the test's other events.
private struct RecordingLogger: Logger {
    let recorder: EventRecorder
    func log(_ priority: LogPriority, _ message: String) { recorder.record("log: \(message)") }
}

/// A listening Unix stream socket in a directory of its own, made when the test says so.
private final class UnixListener {
    let path: String
    private var listener: Int32 = -1

    init() throws {
        var template = Array("/tmp/whereabouts-nmea-XXXXXX".utf8CString)
        let directory = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) })
        path = String(cString: directory) + "/nmea.sock"
    }

    func listen() throws {
        listener = try listeningUnixSocket(at: path)
    }

    /// The connection the provider made, which is waiting in the backlog.
    func accept() throws -> Int32 {
        let peer = Glibc.accept(listener, nil, nil)
        try #require(peer >= 0)
        return peer
    }

    deinit {
        if listener >= 0 { close(listener) }
        unlink(path)
        rmdir(String(path.dropLast("/nmea.sock".count)))
    }
}

@Suite("The NMEA stream provider", .timeLimit(.minutes(1)))
@BusActor
struct NMEAStreamProviderTests {
    @Test func aMissingSocketIsRetriedWithBackoffAndReadOnceItListensThenReopenedWhenItCloses() async throws {
        let clock = ManualClock()
        let recorder = EventRecorder()
        let listener = try UnixListener()
        let provider = NMEAStreamProvider(
            endpoint: .unixSocket(path: listener.path), clock: clock, timers: clock, watches: EventLoop.main,
            logger: RecordingLogger(recorder: recorder))
        provider.onAvailabilityChanged = { [unowned provider] in
            recorder.record("available \(provider.availableLevel)")
        }
        provider.onFix = { recorder.record("fix \(Int(($0.latitude * 1000).rounded()))") }
        #expect(provider.availableLevel == .exact)

        provider.start()
        let missing = "log: nmea: socket \(listener.path): connect: No such file or directory; retrying"
        #expect(recorder.events == [missing, "available none"])
        clock.advance(by: .milliseconds(250))
        #expect(recorder.events.count == 2, "one log line for the whole outage")
        #expect(clock.armedTimers == 1)

        try listener.listen()
        clock.advance(by: .milliseconds(499))
        #expect(provider.availableLevel == .none, "the next attempt is 0.5 s after the second")
        clock.advance(by: .milliseconds(1))
        let reading = "log: nmea: reading socket \(listener.path)"
        #expect(recorder.events.suffix(2) == ["available exact", reading])

        let peer = try listener.accept()
        var bytes = Array(
            ("$GPXXX,garbage*00\r\n" + NMEAFixture.gga("123519") + "\r\n" + NMEAFixture.rmc("123519")
                + "\r\n").utf8)
        #expect(write(peer, &bytes, bytes.count) == bytes.count)
        try await recorder.wait(for: "fix 48117")
        #expect(recorder.events.contains { $0.contains("ignoring a bad sentence") })

        close(peer)
        let ended = "log: nmea: socket \(listener.path): the stream ended; retrying"
        try await recorder.wait(for: ended)
        #expect(recorder.events.suffix(2) == [ended, "available none"])
        clock.advance(by: .milliseconds(249))
        #expect(provider.availableLevel == .none)
        clock.advance(by: .milliseconds(1))
        #expect(provider.availableLevel == .exact, "0.25 s again after a connection that opened")
        #expect(recorder.events.filter { $0 == reading }.count == 2)
        provider.stop()
        #expect(clock.armedTimers == 0)
    }
}
