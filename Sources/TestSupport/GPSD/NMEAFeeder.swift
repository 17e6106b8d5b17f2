import Foundation
import Glibc
import Loop
import Synchronization

/// A thread writing one NMEA epoch to a pseudo-terminal every `interval`, recording when each went out.
public final class NMEAFeeder: Sendable {
    /// One epoch written.
    public struct Write: Sendable {
        /// Its index, from 0.
        public let index: Int
        /// Monotonic nanoseconds just before the write.
        public let writtenAt: Int64
        /// What was written.
        public let epoch: NMEAEpoch
    }

    private struct State {
        var writes: [Write] = []
        var stopRequested = false
        var running = false
    }

    private let terminal: ReceiverTerminal
    private let interval: Duration
    private let makeEpoch: @Sendable (_ index: Int, _ wallTime: Double) -> NMEAEpoch
    private let state = Mutex(State())

    /// `epoch` makes the epoch to write from its index and the wall time (seconds, hundredths) of the write.
    public init(
        terminal: ReceiverTerminal, interval: Duration,
        epoch: @escaping @Sendable (_ index: Int, _ wallTime: Double) -> NMEAEpoch
    ) {
        self.terminal = terminal
        self.interval = interval
        makeEpoch = epoch
    }

    /// Starts writing, the first epoch at once.
    public func start() {
        let start = state.withLock { state -> Bool in
            guard !state.running else { return false }
            state.running = true
            state.stopRequested = false
            return true
        }
        guard start else { return }
        Thread { [self] in run() }.start()
    }

    /// Stops writing, within 20 ms.
    public func stop() { state.withLock { $0.stopRequested = true } }

    /// Waits until the thread has ended after ``stop()``.
    @concurrent
    public func stopped() async {
        while state.withLock({ $0.running }) { try? await Task.sleep(for: .milliseconds(2)) }
    }

    /// The epochs written so far.
    public var writes: [Write] { state.withLock { $0.writes } }

    private func run() {
        defer { state.withLock { $0.running = false } }
        let step = interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000
        var next = monotonicNanoseconds()
        while true {
            // Sleep in short slices until the next epoch is due, so that stop() is honoured quickly.
            while true {
                if state.withLock({ $0.stopRequested }) { return }
                let remaining = next - monotonicNanoseconds()
                if remaining <= 0 { break }
                var pause = timespec(tv_sec: 0, tv_nsec: Int(min(remaining, 20_000_000)))
                nanosleep(&pause, nil)
            }
            let index = state.withLock { $0.writes.count }
            let epoch = makeEpoch(index, NMEA.wallNow())
            let writtenAt = terminal.write(epoch.text)
            state.withLock { $0.writes.append(Write(index: index, writtenAt: writtenAt, epoch: epoch)) }
            // A late thread (a loaded machine) skips ahead rather than writing a burst.
            next = max(next + step, monotonicNanoseconds())
        }
    }
}
