import Glibc
import Loop

/// Ending the process between two events, once what was handed to writer threads is on disk.
///
/// SIGTERM and SIGINT are passed through a pipe to the bus thread (the handler only writes a byte), so that a
/// stop never cuts a method handler short, and the stored decisions and the position cache handed to their
/// writers (``WhereaboutsStorage/BackgroundWriter``) are written before the process ends. A bus thread that never
/// came back to its loop would leave the stop to systemd's SIGKILL after `TimeoutStopSec`, as for any daemon.
enum Shutdown {
    /// Waits for the writes still pending; each bounds its own wait.
    @BusActor private static var flushes: [@BusActor () -> Void] = []

    /// Has `flush` called before the process ends.
    @BusActor static func flushBeforeExit(_ flush: @escaping @BusActor () -> Void) { flushes.append(flush) }

    /// Ends the process with `status` once every pending write is done.
    @BusActor static func exit(_ status: Int32) -> Never {
        for flush in flushes { flush() }
        Glibc.exit(status)
    }

    /// Has SIGTERM and SIGINT written to a pipe whose read end is returned, for the bus thread to watch; nil when
    /// no pipe could be made, and the signals then end the process at once.
    static func catchTerminationSignals() -> Int32? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            signal(SIGTERM) { _ in _exit(0) }
            signal(SIGINT) { _ in _exit(0) }
            return nil
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        terminationPipe = ends[1]
        // Only write(2), which is async-signal-safe, runs in the handler.
        let handler: @convention(c) (Int32) -> Void = { number in
            var byte = UInt8(truncatingIfNeeded: number)
            _ = write(terminationPipe, &byte, 1)
        }
        signal(SIGTERM, handler)
        signal(SIGINT, handler)
        return ends[0]
    }

    /// Ends the process when a termination signal is read from `fd`.
    @BusActor static func watchTerminationSignals(_ fd: Int32) {
        _ = EventLoop.main.addWatch(fd: fd, events: .readable) { _ in
            var byte: UInt8 = 0
            guard read(fd, &byte, 1) == 1 else { return }
            Shutdown.exit(0)
        }
    }
}

/// The pipe's write end, set once before the handlers are installed and only read after.
nonisolated(unsafe) private var terminationPipe: Int32 = -1
