import Foundation
import Glibc
import Loop
import Synchronization
import TestBasics

/// `gpsd -N -n -b -s 38400 -S PORT DEVICE` as a child process, to be killed and restarted by pid.
///
/// `-b` (read-only: no probing of the receiver) and a fixed `-s` speed make gpsd take NMEA from a pty within a
/// fraction of a second; with autobauding and driver probes it takes about 3 s and loses what came meanwhile.
public final class GPSDProcess: Sendable {
    /// The receiver device.
    public let device: String
    /// The TCP port gpsd serves.
    public let port: UInt16
    /// gpsd's standard output and error.
    public let logFile: URL
    private let process = Mutex<ChildProcess?>(nil)

    public init(device: String, port: UInt16, logFile: URL) {
        self.device = device
        self.port = port
        self.logFile = logFile
    }

    /// Starts gpsd and waits until it serves clients (its device is open by then: `-n`).
    @concurrent
    public func start() async throws {
        let child = try ChildProcess(
            try Executables.find("gpsd"), ["-N", "-n", "-b", "-s", "38400", "-S", String(port), device],
            logFile: logFile)
        process.withLock { $0 = child }
        try await eventually("gpsd to serve on port \(port)") { [port] in
            guard child.isRunning else { throw TestEnvironmentError("gpsd exited:\n\(child.log)") }
            return LoopbackTCP.greeting(port: port)?.contains("\"VERSION\"") ?? false
        }
    }

    /// The running gpsd's process id.
    public var pid: pid_t? { process.withLock { $0?.pid } }

    /// Kills gpsd with SIGKILL (no goodbye to its clients) and reaps it.
    @concurrent
    public func kill() async throws {
        guard let child = process.withLock({ $0 }) else { return }
        child.signal(SIGKILL)
        try await eventually("gpsd \(child.pid) to exit", timeout: .seconds(10)) { !child.isRunning }
    }

    /// Stops gpsd if it runs: SIGTERM now, SIGKILL after 2 s; the waiting happens on a thread of its own, so
    /// that a test on the bus thread is not held up.
    public func stop() {
        guard let child = process.withLock({ $0 }) else { return }
        child.signal(SIGTERM)
        Thread { child.stop(grace: 2) }.start()
    }

    deinit { stop() }
}

/// `gpsfake -q -n -W 0 -P PORT -c CYCLE LOG`: gpsd fed from a log, one sentence every `cycle` seconds.
///
/// gpsfake's gpsd is stopped with it (gpsfake does not always pass SIGTERM on, so its children are found and
/// killed too).
public final class GPSFake: Sendable {
    /// The TCP port its gpsd serves.
    public let port: UInt16
    private let process: ChildProcess

    /// Starts gpsfake on `log` and waits until its gpsd accepts connections.
    @concurrent
    public static func start(log: URL, port: UInt16, cycle: Double, logFile: URL) async throws -> GPSFake {
        let process = try ChildProcess(
            try Executables.find("gpsfake"),
            ["-q", "-n", "-W", "0", "-P", String(port), "-c", String(cycle), log.path], logFile: logFile)
        let fake = GPSFake(port: port, process: process)
        try await eventually("gpsfake's gpsd to serve on port \(port)", timeout: .seconds(20)) {
            guard process.isRunning else { throw TestEnvironmentError("gpsfake exited:\n\(process.log)") }
            return LoopbackTCP.greeting(port: port)?.contains("\"VERSION\"") ?? false
        }
        return fake
    }

    private init(port: UInt16, process: ChildProcess) {
        self.port = port
        self.process = process
    }

    /// Stops gpsfake and its gpsd, waiting on a thread of its own (see ``GPSDProcess/stop()``).
    public func stop() {
        let process = process
        let children = GPSFake.children(of: process.pid)
        process.signal(SIGTERM)
        Thread {
            process.stop(grace: 2)
            for child in children { Glibc.kill(child, SIGKILL) }
        }.start()
    }

    deinit { stop() }

    /// The processes whose parent is `pid`, from /proc.
    static func children(of pid: pid_t) -> [pid_t] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry -> pid_t? in
            guard let candidate = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // "pid (comm) state ppid ...": the parent is the second field after the command name.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == pid ? candidate : nil
        }
    }
}
