import Foundation
import Glibc
import TestBasics

/// A child process started with `posix_spawn`, its output appended to a log file.
///
/// It does not depend on a run loop, so it can be started, signalled and reaped from any thread.
public final class ChildProcess: @unchecked Sendable {
    /// The process id.
    public let pid: pid_t
    /// The file receiving the child's standard output and standard error.
    public let logFile: URL
    /// Guards ``exitStatus``: one thread may reap the child while another asks whether it runs. (A pthread lock,
    /// which ThreadSanitizer sees, unlike Swift's `Mutex`.)
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// Starts `executable` with `arguments` and `environment`; output goes to `logFile`.
    public init(
        _ executable: URL, _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        logFile: URL
    ) throws {
        self.logFile = try logFile.creatingFile()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logFile.path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // The child gets only its standard streams, not the runner's other open files.
        closeFrom(3, &actions)
        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // Threads of the test runner block signals; the child must start with none blocked and default handlers.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE, SIGCHLD, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        var result = posix_spawn(&child, executable.path, &actions, &attributes, argv, envp)
        // A program just copied (SharedCopies) is busy for as long as a process another thread was spawning at that
        // moment still holds the copy's descriptor, until that process runs its own program: a moment.
        var busyRetries = 0
        while result == ETXTBSY, busyRetries < 200 {
            busyRetries += 1
            usleep(10_000)
            result = posix_spawn(&child, executable.path, &actions, &attributes, argv, envp)
        }
        guard result == 0 else { throw TestEnvironmentError("cannot start \(executable.path): error \(result)") }
        pid = child
    }

    /// True while the child has not exited.
    public var isRunning: Bool {
        lock.withLock {
            if exitStatus != nil { return false }
            var status: Int32 = 0
            switch waitpid(pid, &status, WNOHANG) {
            case pid:
                exitStatus = status
                return false
            case -1 where errno == ECHILD:
                // Someone else reaped it (a process-wide SIGCHLD handler); its status is lost.
                exitStatus = -1
                return false
            default:
                return true
            }
        }
    }

    /// Sends `signal` to the child.
    public func signal(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Waits up to `timeout` seconds for the child to exit and returns its raw wait status.
    @discardableResult
    public func wait(timeout: Double = 10) throws -> Int32 {
        try Wait.until("process \(pid) to exit", timeout: timeout) { !isRunning }
        return lock.withLock { exitStatus ?? -1 }
    }

    /// The exit code, when the child exited normally.
    public var exitCode: Int32? {
        guard let status = lock.withLock({ exitStatus }), status >= 0, status & 0x7f == 0 else { return nil }
        return (status >> 8) & 0xff
    }

    /// Stops the child: SIGTERM, then SIGKILL after `grace` seconds.
    public func stop(grace: Double = 5) {
        guard isRunning else { return }
        kill(pid, SIGTERM)
        if (try? wait(timeout: grace)) == nil {
            kill(pid, SIGKILL)
            _ = try? wait(timeout: 5)
        }
    }

    /// The log so far.
    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    deinit { stop(grace: 1) }
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+), which Swift's Glibc module does not import.
private func closeFrom(_ lowest: Int32, _ actions: inout posix_spawn_file_actions_t) {
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
    else { return }
    _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, lowest)
}
