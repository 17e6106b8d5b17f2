import Glibc
import Loop
import LoopScheduling
import TestBasics
import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// An opener the test scripts: each attempt takes the next outcome queued, and fails once there is none.
@BusActor
private final class ScriptedOpener: StreamOpener {
    enum Outcome {
        case fail
        case open(StreamConnection)
        case connecting(StreamConnection)
        /// The completion is kept, for the test to call.
        case hold
    }

    let clock: ManualClock
    var outcomes: [Outcome] = []
    /// When each attempt was made, on the manual clock.
    private(set) var attempts: [Duration] = []
    private(set) var held: [@BusActor @Sendable (StreamOpening) -> Void] = []

    init(clock: ManualClock) { self.clock = clock }

    func open(_ completion: @escaping @BusActor @Sendable (StreamOpening) -> Void) {
        attempts.append(clock.monotonicNow - MonotonicTime(nanoseconds: 0))
        guard !outcomes.isEmpty else { return completion(.failed("refused")) }
        switch outcomes.removeFirst() {
        case .fail: completion(.failed("refused"))
        case .open(let connection): completion(.opened(connection))
        case .connecting(let connection): completion(.connecting(connection))
        case .hold: held.append(completion)
        }
    }
}

/// A connected pair of Unix stream sockets: the stream reads `reader`, the test writes to `writer`.
@BusActor
private final class SocketPair {
    let reader: Int32
    let writer: Int32
    private(set) var readerClosed = false

    init() throws {
        var ends: [Int32] = [-1, -1]
        let flags = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        try #require(socketpair(AF_UNIX, flags, 0, &ends) == 0)
        reader = ends[0]
        writer = ends[1]
    }

    /// The reading end as the stream's connection; closing it is noted.
    var connection: StreamConnection {
        StreamConnection(descriptor: reader) { [self] in
            readerClosed = true
            close(reader)
        }
    }

    func write(_ text: String) {
        var bytes = Array(text.utf8)
        #expect(Glibc.write(writer, &bytes, bytes.count) == bytes.count)
    }

    func closeWriter() { close(writer) }
}

/// Durations of `milliseconds`.
private func milliseconds(_ values: [Int]) -> [Duration] { values.map { .milliseconds($0) } }

@Suite("A reconnecting line stream", .timeLimit(.minutes(1)))
@BusActor
struct ReconnectingLineStreamTests {
    let clock = ManualClock()
    let recorder = EventRecorder()

    /// A stream opened by `opener`, cut into lines as NMEA is, reporting to the recorder; `resetOnOpen` makes
    /// every connection count as good once open.
    private func makeStream(_ opener: ScriptedOpener, resetOnOpen: Bool = false) -> ReconnectingLineStream<
        NMEALineSplitter
    > {
        let stream = ReconnectingLineStream(
            opener: opener, framing: NMEALineSplitter(), timers: clock, watches: EventLoop.main)
        let recorder = recorder
        stream.onOpen = { [unowned stream] in
            recorder.record("open")
            if resetOnOpen { stream.resetBackoff() }
        }
        stream.onLine = { recorder.record("line \(String(decoding: $0, as: UTF8.self))") }
        stream.onFailure = { recorder.record("failure: \($0)") }
        return stream
    }

    @Test func failuresPauseAQuarterSecondThenTwiceAsLongEachTimeUpToEightSeconds() {
        let opener = ScriptedOpener(clock: clock)
        let stream = makeStream(opener)
        stream.start()
        #expect(opener.attempts == [.zero])
        #expect(recorder.events == ["failure: refused"])
        clock.advance(by: .milliseconds(249))
        #expect(opener.attempts.count == 1)
        clock.advance(by: .milliseconds(1))
        #expect(opener.attempts.count == 2)
        clock.advance(by: .seconds(60))
        #expect(
            opener.attempts
                == milliseconds([0, 250, 750, 1750, 3750, 7750, 15750, 23750, 31750, 39750, 47750, 55750]))
        #expect(recorder.events == Array(repeating: "failure: refused", count: 12))
        #expect(clock.armedTimers == 1)
        stream.stop()
    }

    @Test func stoppingCancelsTheArmedAttemptAndStartingBeginsThePausesAgain() {
        let opener = ScriptedOpener(clock: clock)
        let stream = makeStream(opener)
        stream.start()
        clock.advance(by: .milliseconds(750))
        #expect(opener.attempts == milliseconds([0, 250, 750]))
        stream.stop()
        #expect(clock.armedTimers == 0)
        clock.advance(by: .seconds(60))
        #expect(opener.attempts.count == 3)
        stream.start()
        #expect(opener.attempts.last == .milliseconds(60750))
        clock.advance(by: .milliseconds(250))
        #expect(opener.attempts.last == .milliseconds(61000), "0.25 s again, not the 1 s the series had reached")
        stream.stop()
        #expect(recorder.events.count == 5)
    }

    @Test func aGoodConnectionStartsThePausesOverAndEachConnectionIsFramedAfresh() async throws {
        let opener = ScriptedOpener(clock: clock)
        let first = try SocketPair()
        let second = try SocketPair()
        opener.outcomes = [.fail, .fail, .open(first.connection), .open(second.connection)]
        let stream = makeStream(opener, resetOnOpen: true)
        stream.start()
        clock.advance(by: .milliseconds(750))
        #expect(opener.attempts == milliseconds([0, 250, 750]))
        #expect(recorder.events == ["failure: refused", "failure: refused", "open"])
        // The second line is cut off by the end of the stream; it must not join the next connection's first.
        first.write("$GPGGA,1\r\n$GPRMC,2")
        first.closeWriter()
        try await recorder.wait(for: "failure: the stream ended")
        #expect(recorder.events.suffix(3) == ["open", "line $GPGGA,1", "failure: the stream ended"])
        #expect(first.readerClosed)
        clock.advance(by: .milliseconds(249))
        #expect(opener.attempts.count == 3)
        clock.advance(by: .milliseconds(1))
        #expect(opener.attempts == milliseconds([0, 250, 750, 1000]), "0.25 s, not the 1 s the series had reached")
        second.write(",3\r\n")
        try await recorder.wait(for: "line ,3")
        #expect(recorder.events.suffix(2) == ["open", "line ,3"])
        stream.stop()
        #expect(second.readerClosed)
        second.closeWriter()
    }

    @Test func aConnectionThatNeverProvedGoodLeavesThePausesGrowing() async throws {
        let opener = ScriptedOpener(clock: clock)
        let pair = try SocketPair()
        opener.outcomes = [.fail, .fail, .open(pair.connection)]
        let stream = makeStream(opener)
        stream.start()
        clock.advance(by: .milliseconds(750))
        #expect(recorder.events.last == "open")
        // The connection ends before it proved good.
        pair.closeWriter()
        try await recorder.wait(for: "failure: the stream ended")
        clock.advance(by: .milliseconds(999))
        #expect(opener.attempts == milliseconds([0, 250, 750]))
        clock.advance(by: .milliseconds(1))
        #expect(opener.attempts == milliseconds([0, 250, 750, 1750]), "1 s: the series went on")
        stream.stop()
    }

    @Test func aConnectionHandedOverAfterItsAttemptWasAbandonedIsClosed() throws {
        let opener = ScriptedOpener(clock: clock)
        let abandoned = try SocketPair()
        let current = try SocketPair()
        opener.outcomes = [.hold, .hold]
        let stream = makeStream(opener)
        stream.start()
        stream.stop()
        stream.start()
        #expect(opener.held.count == 2)
        opener.held[0](.opened(abandoned.connection))
        #expect(abandoned.readerClosed)
        #expect(recorder.events.isEmpty)
        opener.held[1](.opened(current.connection))
        #expect(recorder.events == ["open"] && !current.readerClosed)
        stream.stop()
        #expect(current.readerClosed)
        abandoned.closeWriter()
        current.closeWriter()
    }

    @Test func aConnectUnderWayIsReadOnceTheSocketIsWritable() async throws {
        let opener = ScriptedOpener(clock: clock)
        let pair = try SocketPair()
        opener.outcomes = [.connecting(pair.connection)]
        let stream = makeStream(opener)
        stream.start()
        #expect(recorder.events.isEmpty)
        try await recorder.wait(for: "open")
        pair.write("$GPGSA\n")
        try await recorder.wait(for: "line $GPGSA")
        stream.stop()
        #expect(pair.readerClosed)
        pair.closeWriter()
    }
}
