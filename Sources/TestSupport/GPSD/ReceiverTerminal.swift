import Foundation
import Glibc
import Loop
import Synchronization
import TestBasics

/// A pseudo-terminal whose device end gpsd opens as its receiver; the test writes NMEA to the other end.
///
/// The test keeps the device end open too, so gpsd can be killed and restarted on the same device without a
/// hang-up. Writes never block: with nobody reading, what does not fit is dropped.
public final class ReceiverTerminal: Sendable {
    /// The device path, `/dev/pts/N`.
    public let path: String
    private let controller: Int32
    private let device: Int32
    private let closed = Mutex(false)

    public init() throws {
        let controller = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard controller >= 0 else { throw TestEnvironmentError("cannot open /dev/ptmx: errno \(errno)") }
        var name = [CChar](repeating: 0, count: 256)
        guard ReceiverTerminal.libc("grantpt", controller) == 0, ReceiverTerminal.libc("unlockpt", controller) == 0,
            ReceiverTerminal.ptsname(controller, &name) == 0
        else {
            Glibc.close(controller)
            throw TestEnvironmentError("cannot set up a pseudo-terminal: errno \(errno)")
        }
        _ = fcntl(controller, F_SETFL, fcntl(controller, F_GETFL) | O_NONBLOCK)
        let path = name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let device = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard device >= 0 else {
            Glibc.close(controller)
            throw TestEnvironmentError("cannot open \(path): errno \(errno)")
        }
        // Raw, so that nothing is echoed back or translated before gpsd sets its own modes.
        var attributes = termios()
        tcgetattr(device, &attributes)
        cfmakeraw(&attributes)
        tcsetattr(device, TCSANOW, &attributes)
        self.path = path
        self.controller = controller
        self.device = device
    }

    /// glibc's `grantpt` or `unlockpt`, which Swift's Glibc module does not import (they need `_XOPEN_SOURCE`).
    private static func libc(_ name: String, _ fd: Int32) -> Int32 {
        typealias Function = @convention(c) (Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return -1 }
        return unsafeBitCast(symbol, to: Function.self)(fd)
    }

    /// glibc's `ptsname_r`, likewise.
    private static func ptsname(_ fd: Int32, _ name: inout [CChar]) -> Int32 {
        typealias Function = @convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "ptsname_r") else { return -1 }
        let count = name.count
        return name.withUnsafeMutableBufferPointer {
            unsafeBitCast(symbol, to: Function.self)(fd, $0.baseAddress!, count)
        }
    }

    /// Writes `text` for gpsd to read; returns the monotonic time just before the write, in nanoseconds.
    @discardableResult
    public func write(_ text: String) -> Int64 {
        let bytes = Array(text.utf8)
        return closed.withLock { closed in
            let before = monotonicNanoseconds()
            guard !closed else { return before }
            _ = bytes.withUnsafeBytes { Glibc.write(controller, $0.baseAddress, $0.count) }
            // Whatever gpsd wrote to its receiver is read and dropped, so it can never fill up.
            var sink = [UInt8](repeating: 0, count: 4096)
            while read(controller, &sink, sink.count) > 0 {}
            return before
        }
    }

    /// Closes both ends.
    public func close() {
        closed.withLock { closed in
            guard !closed else { return }
            closed = true
            Glibc.close(controller)
            Glibc.close(device)
        }
    }

    deinit { close() }
}
