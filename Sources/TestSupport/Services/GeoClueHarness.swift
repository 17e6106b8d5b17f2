import DBus
import Foundation
import Glibc
import Loop
import Synchronization
import TestBasics

/// GeoClue 2.6 (`/usr/libexec/geoclue`, Debian package `geoclue-2.0`) on a ``PrivateBus``, reading NMEA from a Unix
/// socket that the harness serves, for the library tests against a plain GeoClue and for benchmarks side by side.
///
/// GeoClue reads its configuration only from `/etc/geoclue/geoclue.conf`. So that the machine's file is neither
/// used nor touched, GeoClue runs in a private mount namespace (`unshare --mount --propagation private`) where the
/// harness's configuration is bind-mounted over that path; the mount lives and dies with GeoClue's namespace.
///
/// GeoClue 2.6 facts to keep in mind (measured with 2.6.0 on Debian 12):
/// - It connects to the NMEA socket as a client (`--nmea-socket PATH`), and only while an exact-level client is
///   started; the harness listens (``nmea``).
/// - Offline only `RequestedAccuracyLevel` 8 gets the NMEA fixes; the configuration here switches every other
///   source off.
/// - `GetClient` and `CreateClient` are answered only once an agent for the caller's UID has called `AddAgent`
///   (``GeoClueTestAgent``); until then the calls hang.
/// - `Start` needs `DesktopId`. An app listed with `allowed=true` starts without the agent's `AuthorizeApp`;
///   `system=true` also keeps it out of `InUse`.
public final class GeoClueHarness: @unchecked Sendable {
    /// GeoClue's daemon in Debian's `geoclue-2.0` package.
    public static let executable = URL(fileURLWithPath: "/usr/libexec/geoclue")
    /// The agent id the harness's configuration whitelists.
    public static let agentId = "whereabouts-test-agent"

    /// The one location source a configuration turns on.
    public enum Source: Sendable, Equatable {
        /// `[network-nmea]`: the NMEA socket the harness serves (``nmea``).
        case nmeaSocket
        /// `[wifi]`: the Wi-Fi source, asking `url` and submitting nothing.
        case wifi(url: String)
        /// `[modem-gps]`: the GPS of the first modem ModemManager has with the Location interface, through
        /// libmm-glib on the system bus (the private bus, here).
        case modemGPS
    }

    /// A geoclue.conf with only `source` on, ``agentId`` whitelisted, and `apps` (desktop id → system component)
    /// allowed for every user.
    public static func configuration(apps: [String: Bool], source: Source = .nmeaSocket) -> String {
        let wifi = if case .wifi(let url) = source { "enable=true\nurl=\(url)" } else { "enable=false" }
        var text = """
            [agent]
            whitelist=\(agentId)

            [network-nmea]
            enable=\(source == .nmeaSocket)

            [3g]
            enable=false

            [cdma]
            enable=false

            [modem-gps]
            enable=\(source == .modemGPS)

            [wifi]
            \(wifi)
            submit-data=false

            [compass]
            enable=false

            """
        for (app, system) in apps.sorted(by: { $0.key < $1.key }) {
            text += "\n[\(app)]\nallowed=true\nsystem=\(system)\nusers=\n"
        }
        return text
    }

    /// The private bus.
    public let bus: PrivateBus
    /// The folder for the configuration, the NMEA socket and the log.
    public let directory: URL
    /// The NMEA socket GeoClue reads; write epochs to it.
    public let nmea: NMEASocketFeeder
    /// The GeoClue process (its pid is GeoClue's: `unshare` and `bash` exec it).
    public private(set) var process: ChildProcess?
    /// Whether the harness made ``bus`` (and so stops it).
    private let ownsBus: Bool

    /// Writes `config` (see ``configuration(apps:source:)``) and listens on the NMEA socket; call ``start()`` to start
    /// GeoClue. A `bus` passed in is left running by ``stop()``. Throws when GeoClue is not installed.
    public init(
        config: String = GeoClueHarness.configuration(apps: ["whereabouts-test": false]), bus: PrivateBus? = nil
    ) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable.path) else {
            throw TestEnvironmentError(
                "\(Self.executable.path) is not installed (Debian package geoclue-2.0); run the test command from the README, which installs it"
            )
        }
        self.bus = try bus ?? PrivateBus()
        ownsBus = bus == nil
        directory = self.bus.directory.appendingPathComponent("geoclue-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        nmea = try NMEASocketFeeder(path: directory.appendingPathComponent("nmea.sock").path)
        try config.write(to: configFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: configFile.path)
    }

    /// The configuration bind-mounted over `/etc/geoclue/geoclue.conf`.
    public var configFile: URL { directory.appendingPathComponent("geoclue.conf") }

    /// GeoClue's standard output and error.
    public var logFile: URL { directory.appendingPathComponent("geoclue.log") }

    /// GeoClue's output so far.
    public var log: String { process?.log ?? "" }

    /// The bash script that mounts the configuration and execs GeoClue; `prelude` runs just before the exec. With
    /// `user`, GeoClue runs as that user (and group of the same name), as its package runs it as `geoclue`;
    /// otherwise as root.
    public func launchScript(prelude: String = "", asUser user: String? = nil) throws -> String {
        let mount = try Executables.find("mount")
        let dropPrivileges = try user.map { user in
            [try Executables.find("setpriv").path, "--reuid=\(user)", "--regid=\(user)", "--clear-groups"]
                .map(shellQuoted).joined(separator: " ") + " "
        }
        return [
            "set -e",
            "\(shellQuoted(mount.path)) --bind \(shellQuoted(configFile.path)) /etc/geoclue/geoclue.conf",
            prelude,
            "exec \(dropPrivileges ?? "")\(shellQuoted(Self.executable.path)) -t 0 --nmea-socket \(shellQuoted(nmea.path))",
        ].joined(separator: "\n")
    }

    /// The program and arguments that start GeoClue in its own mount namespace (see
    /// ``launchScript(prelude:asUser:)``).
    public func launchCommand(prelude: String = "", asUser user: String? = nil) throws -> (
        executable: URL, arguments: [String]
    ) {
        (
            try Executables.find("unshare"),
            [
                "--mount", "--propagation", "private", "/bin/bash", "-c",
                try launchScript(prelude: prelude, asUser: user),
            ]
        )
    }

    /// Starts GeoClue, as `user` if given (see ``launchScript(prelude:asUser:)``), and waits until it owns
    /// `org.freedesktop.GeoClue2`.
    public func start(asUser user: String? = nil) throws {
        let command = try launchCommand(asUser: user)
        let process = try ChildProcess(
            command.executable, command.arguments, environment: bus.environment, logFile: logFile)
        self.process = process
        try Wait.until("GeoClue to own org.freedesktop.GeoClue2", timeout: 20) {
            guard process.isRunning else { throw TestEnvironmentError("GeoClue exited early:\n\(process.log)") }
            return try nameOwned()
        }
    }

    /// Whether `org.freedesktop.GeoClue2` is owned on the bus.
    public func nameOwned() throws -> Bool {
        let result = try Unprivileged.run(
            [try Executables.find("busctl").path, "--address=\(bus.address)", "status", "org.freedesktop.GeoClue2"],
            asUser: nil, environment: bus.environment, in: directory, timeout: 10)
        return result.status == 0
    }

    /// Stops GeoClue, the NMEA socket and the bus unless it was passed in.
    public func stop() {
        process?.stop(grace: 2)
        nmea.close()
        if ownsBus { bus.stop() }
    }

    deinit { stop() }
}

/// A Unix stream socket that GeoClue (`--nmea-socket`) and whereaboutsd (`[network-nmea] nmea-socket=`) connect
/// to as clients; everything written goes to every connected reader, so several services can read one receiver.
/// A thread accepts readers; writes never block (a reader that does not keep up loses what does not fit).
public final class NMEASocketFeeder: Sendable {
    private struct State {
        var readers: [Int32] = []
        var accepted = 0
        var stopRequested = false
        var epochTimes: [Int64] = []
        var epochsRequested = false
        var epochsRunning = false
    }

    /// The socket's path.
    public let path: String
    private let listener: Int32
    private let state = Mutex(State())

    /// Listens on `path` (world-writable, so that services running as other users can connect).
    public init(path: String) throws {
        self.path = path
        unlink(path)
        listener = try listeningUnixSocket(at: path, backlog: 16)
        chmod(path, 0o777)
        Thread { [self] in acceptReaders() }.start()
    }

    /// The readers connected now.
    public var readers: Int { state.withLock { $0.readers.count } }

    /// The readers accepted since the start, including those gone.
    public var accepted: Int { state.withLock { $0.accepted } }

    /// Writes `text` to every connected reader and returns the monotonic time just before; readers that hung up
    /// are dropped.
    @discardableResult
    public func write(_ text: String) -> Int64 {
        let bytes = Array(text.utf8)
        return state.withLock { state in
            let now = monotonicNanoseconds()
            state.readers.removeAll { fd in
                let sent = bytes.withUnsafeBytes {
                    send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                guard sent < 0, errno != EAGAIN else { return false }
                Glibc.close(fd)
                return true
            }
            return now
        }
    }

    /// Starts a thread writing one epoch every `interval`, the first at once; `epoch` makes it from its index and
    /// the wall time (seconds, hundredths). Does nothing while epochs are being written.
    public func startEpochs(
        interval: Duration, epoch: @escaping @Sendable (_ index: Int, _ wallTime: Double) -> NMEAEpoch
    ) {
        let start = state.withLock { state -> Bool in
            guard !state.epochsRunning else { return false }
            state.epochsRunning = true
            state.epochsRequested = true
            return true
        }
        guard start else { return }
        let step = interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000
        Thread { [self] in
            defer { state.withLock { $0.epochsRunning = false } }
            var next = monotonicNanoseconds()
            while true {
                while true {
                    if state.withLock({ !$0.epochsRequested || $0.stopRequested }) { return }
                    let remaining = next - monotonicNanoseconds()
                    if remaining <= 0 { break }
                    var pause = timespec(tv_sec: 0, tv_nsec: Int(min(remaining, 20_000_000)))
                    nanosleep(&pause, nil)
                }
                let index = state.withLock { $0.epochTimes.count }
                let writtenAt = write(epoch(index, NMEA.wallNow()).text)
                state.withLock { $0.epochTimes.append(writtenAt) }
                // A late thread (a loaded machine) skips ahead rather than writing a burst.
                next = max(next + step, monotonicNanoseconds())
            }
        }.start()
    }

    /// Stops writing epochs, within 20 ms.
    public func stopEpochs() { state.withLock { $0.epochsRequested = false } }

    /// The monotonic times at which the epochs so far were written.
    public var epochTimes: [Int64] { state.withLock { $0.epochTimes } }

    /// Waits until at least `count` readers are connected.
    @concurrent
    public func waitForReaders(_ count: Int, timeout: Duration = .seconds(10)) async throws {
        try await eventually("\(count) reader(s) of \(path)", timeout: timeout) { self.readers >= count }
    }

    /// Closes the readers and stops listening, within 20 ms.
    public func close() {
        state.withLock { state in
            state.stopRequested = true
            state.readers.forEach { Glibc.close($0) }
            state.readers.removeAll()
        }
    }

    private func acceptReaders() {
        defer {
            Glibc.close(listener)
            unlink(path)
        }
        while !state.withLock({ $0.stopRequested }) {
            var entry = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 20) > 0 else { continue }
            let reader = accept(listener, nil, nil)
            guard reader >= 0 else { continue }
            _ = fcntl(reader, F_SETFD, FD_CLOEXEC)
            state.withLock { state in
                guard !state.stopRequested else {
                    Glibc.close(reader)
                    return
                }
                state.readers.append(reader)
                state.accepted += 1
            }
        }
    }

    deinit { close() }
}

/// `text` quoted for `/bin/sh`.
func shellQuoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}
