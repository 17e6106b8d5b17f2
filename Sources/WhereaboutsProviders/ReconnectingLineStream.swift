import Loop
import LoopScheduling
import WhereaboutsCore

#if canImport(Glibc)
    import Glibc
#endif

/// The most bytes one read takes.
private let chunkSize = 4096
/// How many reads one readiness of the descriptor gets: a source that never pauses still lets the loop serve
/// everything else between its chunks.
private let readsPerWakeUp = 16

/// Lines read from a connection that is opened again whenever it ends or fails: the shape of the NMEA and gpsd
/// providers' streams.
///
/// While started, it opens a connection through its ``StreamOpener``, waits on the event loop for a `connect`
/// still under way, and reads the descriptor whenever the loop finds it readable, never blocking the bus thread;
/// the bytes become lines through a fresh `Framing` for each connection. When opening fails, or the connection
/// ends or fails, it closes the connection, arms the next attempt and tells ``onFailure`` why. The pause before
/// that attempt follows a ``ReconnectBackoff`` (0.25 s doubling to 8 s), which starts over when the stream starts
/// and when its owner says the connection proved good (``resetBackoff()``): on opening for an NMEA receiver, at
/// the first fix for gpsd. The pauses are timed by the ``TimerScheduler`` it is given, and the descriptors watched
/// by the ``DescriptorWatcher``, which must run its actions on the loop `@BusActor` code runs on.
@BusActor
public final class ReconnectingLineStream<Framing: LineFraming> {
    /// Called when a connection has opened and its reading starts.
    public var onOpen: (@BusActor () -> Void)?
    /// Called with each line read, without its terminator.
    public var onLine: (@BusActor ([UInt8]) -> Void)?
    /// Called with the reason when opening failed or the connection ended or failed; the next attempt is armed.
    public var onFailure: (@BusActor (String) -> Void)?

    private enum State {
        case stopped
        case opening
        case connecting(StreamConnection, DescriptorWatch)
        case reading(StreamConnection, DescriptorWatch)
        case waiting(ScheduledTimer)
    }

    private let opener: any StreamOpener
    private let freshFraming: Framing
    private let timers: any TimerScheduler
    private let watches: any DescriptorWatcher
    private var framing: Framing
    private var backoff = ReconnectBackoff()
    private var state = State.stopped
    /// Counts the attempts and the stops, so that a callback meant for an earlier attempt is told apart.
    private var attempt: UInt64 = 0
    private var chunk = [UInt8](repeating: 0, count: chunkSize)

    /// A stream opened by `opener`, cut into lines by a copy of `framing` for each connection, its pauses timed by
    /// `timers` and its connections watched by `watches`.
    public init(
        opener: any StreamOpener, framing: Framing, timers: any TimerScheduler, watches: any DescriptorWatcher
    ) {
        self.opener = opener
        self.freshFraming = framing
        self.framing = framing
        self.timers = timers
        self.watches = watches
    }

    /// Opens the stream, at once, unless it is started already; the backoff starts over.
    public func start() {
        guard case .stopped = state else { return }
        backoff = ReconnectBackoff()
        open()
    }

    /// Closes the connection, or cancels the attempt under way or armed; nothing is called back after this.
    public func stop() {
        attempt &+= 1
        release()
    }

    /// Says the connection proved good: the next failure pauses 0.25 s again.
    public func resetBackoff() { backoff.succeeded() }

    // MARK: Opening

    private func open() {
        attempt &+= 1
        let attempt = attempt
        state = .opening
        opener.open { [weak self] opening in
            guard let self, attempt == self.attempt, case .opening = self.state else {
                switch opening {
                case .opened(let connection), .connecting(let connection): connection.close()
                case .failed: break
                }
                return
            }
            switch opening {
            case .opened(let connection): self.startReading(connection)
            case .connecting(let connection): self.awaitConnect(connection)
            case .failed(let reason): self.fail(reason)
            }
        }
    }

    private func awaitConnect(_ connection: StreamConnection) {
        let attempt = attempt
        let watch = watches.watchOnBus(connection.descriptor, for: .writable) { [weak self] in
            self?.connectFinished(attempt)
        }
        state = .connecting(connection, watch)
    }

    private func connectFinished(_ attempt: UInt64) {
        guard attempt == self.attempt, case .connecting(let connection, let watch) = state else { return }
        var failure: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(connection.descriptor, SOL_SOCKET, SO_ERROR, &failure, &length) != 0 { failure = errno }
        guard failure == 0 else { return fail("connect: \(String(cString: strerror(failure)))") }
        watches.cancelWatch(watch)
        startReading(connection)
    }

    // MARK: Reading

    private func startReading(_ connection: StreamConnection) {
        framing = freshFraming
        let attempt = attempt
        let watch = watches.watchOnBus(connection.descriptor, for: .readable) { [weak self] in
            self?.readAvailable(attempt)
        }
        state = .reading(connection, watch)
        onOpen?()
    }

    private func readAvailable(_ attempt: UInt64) {
        for _ in 0..<readsPerWakeUp {
            guard attempt == self.attempt, case .reading(let connection, _) = state else { return }
            var failure: Int32 = 0
            let count = chunk.withUnsafeMutableBytes { buffer in
                let count = read(connection.descriptor, buffer.baseAddress, buffer.count)
                failure = errno
                return count
            }
            if count < 0 && (failure == EAGAIN || failure == EINTR) { return }
            guard count > 0 else {
                return fail(count == 0 ? "the stream ended" : "read: \(String(cString: strerror(failure)))")
            }
            for line in framing.append(chunk[0..<count]) {
                onLine?(line)
                // The owner may have stopped the stream, or stopped and started it, for this line.
                guard attempt == self.attempt else { return }
            }
        }
    }

    // MARK: Failing

    private func fail(_ reason: String) {
        release()
        let attempt = attempt
        state = .waiting(timers.scheduleOnBus(after: backoff.failed()) { [weak self] in self?.retry(attempt) })
        onFailure?(reason)
    }

    private func retry(_ attempt: UInt64) {
        guard attempt == self.attempt, case .waiting = state else { return }
        open()
    }

    /// Lets go of what the current state holds: the connection and its watch, or the armed attempt.
    private func release() {
        switch state {
        case .connecting(let connection, let watch), .reading(let connection, let watch):
            watches.cancelWatch(watch)
            connection.close()
        case .waiting(let timer):
            timers.cancelTimer(timer)
        case .stopped, .opening:
            break
        }
        state = .stopped
    }
}
