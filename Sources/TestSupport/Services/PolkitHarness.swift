import Foundation
import Glibc
import TestBasics

/// A real `polkitd` on a ``PrivateBus``, with the project's `polkit/*.policy` and rules chosen by the test.
///
/// polkitd reads actions only from `/usr/share/polkit-1/actions` and rules only from `/etc/polkit-1/rules.d` and
/// `/usr/share/polkit-1/rules.d`. So that the machine's own files are neither used nor touched, polkitd runs in a
/// private mount namespace (`unshare --mount --propagation private`) where temporary folders are bind-mounted over
/// those three paths: the actions folder holds the project's policy files, `/etc/polkit-1/rules.d` the test's
/// rules, and `/usr/share/polkit-1/rules.d` nothing (so the distribution's admin rule is absent too; the
/// administrator is root).
///
/// The bus must let the `polkitd` user own `org.freedesktop.PolicyKit1` and everyone call it: create it with
/// ``makeBus(extraPolicy:)`` or pass ``busPolicy`` to `PrivateBus(extraPolicy:)`.
///
/// polkit facts to keep in mind (measured with polkitd 122):
/// - root is always authorised, and rules are not even consulted for it: check for an unprivileged subject.
/// - A subject outside any logind session is `local=false active=false`, so only `allow_any` applies.
/// - Only root or a user named in an action's `org.freedesktop.policykit.owner` annotation may pass details or
///   check another user's process (see ``init(bus:rules:actionOwner:)``).
public final class PolkitHarness: @unchecked Sendable {
    /// The polkit daemon of Debian's `polkitd` package.
    public static let executable = URL(fileURLWithPath: "/usr/lib/polkit-1/polkitd")
    /// The bus name polkitd owns.
    public static let busName = "org.freedesktop.PolicyKit1"

    /// Bus policy letting polkitd own its name and everyone call it, as `/usr/share/dbus-1/system.d/
    /// org.freedesktop.PolicyKit1.conf` does on a real system bus.
    public static let busPolicy = """
        <policy user="polkitd">
          <allow own="org.freedesktop.PolicyKit1"/>
          <allow send_interface="org.freedesktop.PolicyKit1.AuthenticationAgent"/>
        </policy>
        <policy context="default">
          <allow send_destination="org.freedesktop.PolicyKit1"/>
        </policy>
        """

    /// A private bus polkitd can run on (``busPolicy`` plus `extraPolicy`).
    public static func makeBus(extraPolicy: String = "") throws -> PrivateBus {
        try PrivateBus(extraPolicy: busPolicy + "\n" + extraPolicy)
    }

    /// The text of one of the shipped example rules in `polkit/examples/`, e.g. `50-whereabouts-kiosk.rules`.
    public static func exampleRules(_ name: String) throws -> String {
        let url = ProjectPaths.root.appendingPathComponent("polkit/examples").appendingPathComponent(name)
        do { return try String(contentsOf: url, encoding: .utf8) } catch {
            throw TestEnvironmentError("cannot read \(url.path): \(error)")
        }
    }

    /// The bus polkitd serves.
    public let bus: PrivateBus
    /// The folder holding `actions/`, `rules.d/`, `vendor-rules.d/` and the log.
    public let directory: URL
    /// polkitd's standard output and error, across restarts (rule `polkit.log` lines and errors go here).
    public let logFile: URL
    /// The running polkitd (its pid is polkitd's: `unshare` and `sh` exec it).
    public private(set) var process: ChildProcess?

    private let actionsDirectory: URL
    private let rulesDirectory: URL
    private let vendorRulesDirectory: URL

    /// Writes the policy and `rules` (file name, which must end in `.rules`, → JavaScript) and starts polkitd,
    /// returning once it owns `org.freedesktop.PolicyKit1`.
    ///
    /// `actionOwner` replaces the value of every `org.freedesktop.policykit.owner` annotation in the installed
    /// copies of the policy (e.g. `"unix-user:daemon"`), so that a test can play the non-root service user, which
    /// `polkit/*.policy` names as `unix-user:whereabouts`. `extraPolicies` (file name → XML) declares other
    /// services' actions, such as ModemManager's, that a shipped rule grants.
    public init(
        bus: PrivateBus, rules: [String: String] = [:], actionOwner: String? = nil,
        extraPolicies: [String: String] = [:]
    ) throws {
        self.bus = bus
        directory = bus.directory.appendingPathComponent("polkit-\(UUID().uuidString.prefix(8))")
        actionsDirectory = directory.appendingPathComponent("actions")
        rulesDirectory = directory.appendingPathComponent("rules.d")
        vendorRulesDirectory = directory.appendingPathComponent("vendor-rules.d")
        logFile = directory.appendingPathComponent("polkitd.log")
        guard FileManager.default.isExecutableFile(atPath: Self.executable.path) else {
            throw TestEnvironmentError(
                "\(Self.executable.path) is not installed (Debian package polkitd); run the test command from the README, which installs it"
            )
        }
        // polkitd drops to the polkitd user: every folder on the way and every file must be world-readable.
        for folder in [directory, actionsDirectory, rulesDirectory, vendorRulesDirectory] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        }
        try installPolicy(actionOwner: actionOwner)
        for (name, text) in extraPolicies {
            guard name.hasSuffix(".policy"), !name.contains("/") else {
                throw TestEnvironmentError("polkit policy file name \(name) must be a plain name ending in .policy")
            }
            try write(text, to: actionsDirectory.appendingPathComponent(name))
        }
        try setRuleFiles(rules)
        try start()
    }

    /// True while polkitd runs.
    public var isRunning: Bool { process?.isRunning ?? false }

    /// polkitd's output so far, across restarts.
    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Kills polkitd (SIGKILL, as a crash would) and waits until its bus name is gone. Does nothing if it is stopped.
    public func stop() {
        guard let process else { return }
        self.process = nil
        process.signal(SIGKILL)
        _ = try? process.wait(timeout: 5)
        // The bus notices the closed connection asynchronously.
        _ = try? Wait.until("\(Self.busName) to be released", timeout: 5) { !(try self.nameOwned(by: nil)) }
    }

    /// Kills polkitd and starts it again with the same policy and rules; returns once the new one owns its name.
    public func restart() throws {
        stop()
        try start()
    }

    /// Starts polkitd if it is not running; returns once it owns its name. A start that fails on a loaded machine
    /// is tried once more; a second failure throws with polkitd's log.
    public func start() throws {
        do {
            try startOnce()
        } catch {
            appendToLog("--- the first start failed: \(error)\n")
            try startOnce()
        }
    }

    private func startOnce() throws {
        if isRunning { return }
        let unshare = try Executables.find("unshare")
        let mount = try Executables.find("mount")
        // The mounts live and die with polkitd's private namespace; nothing outside it sees them.
        let script = [
            "set -e",
            "\(quoted(mount.path)) --bind \(quoted(actionsDirectory.path)) /usr/share/polkit-1/actions",
            "\(quoted(mount.path)) --bind \(quoted(rulesDirectory.path)) /etc/polkit-1/rules.d",
            "\(quoted(mount.path)) --bind \(quoted(vendorRulesDirectory.path)) /usr/share/polkit-1/rules.d",
            // Without --no-debug: that option sends polkitd's output, rule logs included, to /dev/null.
            "exec \(quoted(Self.executable.path))",
        ].joined(separator: "\n")
        appendToLog("--- starting polkitd at \(Date())\n")
        let process = try ChildProcess(
            unshare, ["--mount", "--propagation", "private", "/bin/sh", "-c", script], environment: bus.environment,
            logFile: logFile)
        self.process = process
        do {
            try Wait.until("polkitd to own \(Self.busName)", timeout: 20) {
                guard process.isRunning else {
                    throw TestEnvironmentError(
                        "polkitd (under unshare) exited, code \(process.exitCode.map(String.init) ?? "?")")
                }
                if try nameOwned(by: process.pid) { return true }
                usleep(40_000)
                return false
            }
        } catch {
            self.process = nil
            process.signal(SIGKILL)
            _ = try? process.wait(timeout: 5)
            throw TestEnvironmentError("\(error)\npolkitd log (\(logFile.path)):\n\(log)")
        }
    }

    /// Runs `arguments` as `user` (by default the unprivileged `nobody`, with no supplementary groups) with the bus
    /// as its system bus, and returns its exit code and its standard output and error, merged.
    public func run(_ arguments: [String], asUser user: String? = "nobody", timeout: Double = 30) throws
        -> CommandResult
    {
        try Unprivileged.run(arguments, asUser: user, environment: bus.environment, in: directory, timeout: timeout)
    }

    /// Starts `arguments` as `user` in the background with the bus environment, e.g. `["sleep", "60"]` to serve
    /// as the subject of checks made by another caller, and returns once the program runs as `user` (setpriv has
    /// switched and exec'd; a check made earlier would see a root process, which polkit always authorises).
    /// The process is killed when the returned object goes away.
    public func spawn(_ arguments: [String], asUser user: String = "nobody") throws -> ChildProcess {
        let process = try Unprivileged.spawn(arguments, asUser: user, environment: bus.environment, in: directory)
        let name = String(URL(fileURLWithPath: arguments[0]).lastPathComponent.prefix(15))
        try Wait.until("\(arguments[0]) to run as \(user)", timeout: 10) {
            guard process.isRunning else { throw TestEnvironmentError("\(arguments[0]) exited:\n\(process.log)") }
            let comm = (try? String(contentsOfFile: "/proc/\(process.pid)/comm", encoding: .utf8)) ?? ""
            return comm.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }
        return process
    }

    /// Asks polkit with `pkcheck` whether a process may do `action`, without user interaction.
    ///
    /// With `subject` nil, `caller` checks its own process (a shell running pkcheck). Otherwise `caller` checks the
    /// process `subject`; polkit allows that for another user's process, and allows `details` at all, only when
    /// the caller is root or the action's owner. `caller` nil means root.
    public func pkcheck(
        _ action: String, subject: pid_t? = nil, details: [String: String] = [:], caller: String? = "nobody"
    ) throws -> PolkitCheck {
        let pkcheck = try Executables.find("pkcheck").path
        var command = ["--action-id", action]
        for (key, value) in details.sorted(by: { $0.key < $1.key }) { command += ["--detail", key, value] }
        let result: CommandResult
        if let subject {
            result = try run([pkcheck] + command + ["--process", String(subject)], asUser: caller)
        } else {
            let script = ([pkcheck] + command).map(quoted).joined(separator: " ") + " --process $$"
            result = try run(["/bin/sh", "-c", script], asUser: caller)
        }
        return PolkitCheck(exitCode: result.status, output: result.output)
    }

    /// Registers polkit's text authentication agent (`pkttyagent`, run by root under `script` for the terminal it
    /// needs) for the process `subject`, and returns once polkitd has registered it. When a check for `subject`
    /// with user interaction needs authentication, the agent's output (its ``ChildProcess/log``) shows polkit's
    /// message with the details substituted, then waits for a password. Kill it with SIGKILL (its pty closes and
    /// pkttyagent goes with it); SIGTERM leaves `script` hanging.
    public func startTextAgent(for subject: pid_t) throws -> ChildProcess {
        let agent = try Unprivileged.spawn(
            [
                try Executables.find("script").path, "--quiet", "--flush", "--command",
                "\(try Executables.find("pkttyagent").path) --process \(subject)", "/dev/null",
            ],
            asUser: nil, environment: bus.environment, in: directory)
        try Wait.until("pkttyagent to register for process \(subject)", timeout: 10) {
            guard agent.isRunning else { throw TestEnvironmentError("pkttyagent exited:\n\(agent.log)") }
            return log.contains("Registered Authentication Agent for unix-process:\(subject):")
        }
        return agent
    }

    /// Calls `org.freedesktop.PolicyKit1.Authority.CheckAuthorization` with `busctl` as `caller` (nil: root) for the
    /// `unix-process` subject `subject` (pid, start time and uid, as polkitd 122 wants them), without user
    /// interaction; the output is busctl's, e.g. `(bba{ss}) false true 0` (authorised, challenge, details).
    public func checkAuthorization(
        _ action: String, subject: pid_t, details: [String: String] = [:], caller: String? = "nobody"
    ) throws -> CommandResult {
        let statLine = try String(contentsOfFile: "/proc/\(subject)/stat", encoding: .utf8)
        // Field 22 is the start time; fields are counted after the parenthesised command name, which may hold spaces.
        guard let close = statLine.lastIndex(of: ")") else { throw TestEnvironmentError("bad /proc/\(subject)/stat") }
        let fields = statLine[statLine.index(after: close)...].split(separator: " ")
        let owner = try FileManager.default.attributesOfItem(atPath: "/proc/\(subject)")[.ownerAccountID] as? NSNumber
        guard fields.count > 19, let uid = owner?.uint32Value else {
            throw TestEnvironmentError("cannot read process \(subject)")
        }
        let startTime = String(fields[19])
        var arguments = [
            try Executables.find("busctl").path, "--address=\(bus.address)", "call", Self.busName,
            "/org/freedesktop/PolicyKit1/Authority", "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization",
            "(sa{sv})sa{ss}us", "unix-process", "3", "pid", "u", String(subject), "start-time", "t", startTime,
            "uid", "i", String(Int32(bitPattern: uid)), action, String(details.count),
        ]
        for (key, value) in details.sorted(by: { $0.key < $1.key }) { arguments += [key, value] }
        arguments += ["0", ""]
        return try run(arguments, asUser: caller)
    }

    /// Whether `org.freedesktop.PolicyKit1` is owned (by process `pid` when given).
    public func nameOwned(by pid: pid_t?) throws -> Bool {
        let result = try Unprivileged.run(
            [try Executables.find("busctl").path, "--address=\(bus.address)", "status", Self.busName], asUser: nil,
            environment: bus.environment, in: directory, timeout: 10)
        guard result.status == 0 else { return false }
        guard let pid else { return true }
        return result.output.split(separator: "\n").contains("PID=\(pid)")
    }

    private func installPolicy(actionOwner: String?) throws {
        let source = ProjectPaths.root.appendingPathComponent("polkit")
        let policies = try FileManager.default.contentsOfDirectory(atPath: source.path).filter {
            $0.hasSuffix(".policy")
        }
        guard !policies.isEmpty else { throw TestEnvironmentError("no .policy file in \(source.path)") }
        for name in policies {
            var text = try String(contentsOf: source.appendingPathComponent(name), encoding: .utf8)
            if let actionOwner {
                text = text.replacingOccurrences(
                    of: #"(<annotate key="org\.freedesktop\.policykit\.owner">)[^<]*(</annotate>)"#,
                    with: "$1\(actionOwner)$2", options: .regularExpression)
            }
            try write(text, to: actionsDirectory.appendingPathComponent(name))
        }
    }

    /// Writes (or replaces) rule files while polkitd runs; polkitd notices the change, reloads its rules and
    /// emits `Authority.Changed`.
    public func setRules(_ rules: [String: String]) throws {
        try setRuleFiles(rules)
    }

    private func setRuleFiles(_ rules: [String: String]) throws {
        for (name, text) in rules {
            // polkitd silently ignores any other name, which would make a test pass or fail for the wrong reason.
            guard name.hasSuffix(".rules"), !name.contains("/"), !name.hasPrefix(".") else {
                throw TestEnvironmentError("polkit rules file name \(name) must be a plain name ending in .rules")
            }
            try write(text, to: rulesDirectory.appendingPathComponent(name))
        }
    }

    private func write(_ text: String, to url: URL) throws {
        try text.write(to: url, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: url.path)
    }

    private func appendToLog(_ text: String) {
        guard let handle = try? FileHandle(forWritingTo: logFile.creatingFile()) else { return }
        defer { try? handle.close() }
        _ = try? handle.seekToEnd()
        try? handle.write(contentsOf: Data(text.utf8))
    }

    deinit { stop() }
}

/// The answer of one `pkcheck` run.
public struct PolkitCheck: Sendable, CustomStringConvertible {
    /// What polkit answered.
    public enum Answer: Sendable, Equatable {
        /// Exit 0.
        case authorised
        /// Exit 2: authorisation needs authentication (an agent would prompt).
        case challenge
        /// Exit 1.
        case notAuthorised
        /// Exit 3: the user dismissed the prompt.
        case dismissed
        /// Anything else (pkcheck exits 127 when the check itself failed, e.g. polkitd absent or a refused caller).
        case failed
    }

    /// pkcheck's exit code (-1 if it did not exit normally).
    public let exitCode: Int32
    /// Its standard output (result details as `KEY=VALUE` lines) and standard error, merged.
    public let output: String

    public init(exitCode: Int32, output: String) {
        self.exitCode = exitCode
        self.output = output
    }

    public var answer: Answer {
        switch exitCode {
        case 0: .authorised
        case 1: .notAuthorised
        case 2: .challenge
        case 3: .dismissed
        default: .failed
        }
    }

    public var description: String {
        let lines = output.split(whereSeparator: \.isNewline).joined(separator: " | ")
        return "\(answer) (pkcheck exit \(exitCode)): \(lines)"
    }
}

/// The outcome of a command run by ``Unprivileged/run(_:asUser:environment:in:timeout:)``.
public struct CommandResult: Sendable {
    /// The exit code; -1 when the command was killed by a signal.
    public let status: Int32
    /// Standard output and standard error, merged.
    public let output: String
}

/// Running commands as an unprivileged user, the way an app calls the service.
public enum Unprivileged {
    /// `setpriv` arguments that switch to `user` (its primary group; `nobody` gets `nogroup`) with no
    /// supplementary groups.
    public static func prefix(asUser user: String) throws -> [String] {
        let group = user == "nobody" ? "nogroup" : user
        return [try Executables.find("setpriv").path, "--reuid=\(user)", "--regid=\(group)", "--clear-groups"]
    }

    /// Runs `arguments` (`arguments[0]` an absolute path, or a name found in PATH) as `user` (nil: as the test
    /// runner, normally root) with `environment`, and waits up to `timeout` seconds for it.
    public static func run(
        _ arguments: [String], asUser user: String? = "nobody", environment: [String: String], in directory: URL,
        timeout: Double = 30
    ) throws -> CommandResult {
        let output = directory.appendingPathComponent("command-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: output) }
        let process = try spawn(arguments, asUser: user, environment: environment, logFile: output)
        do {
            try process.wait(timeout: timeout)
        } catch {
            process.stop(grace: 1)
            throw TestEnvironmentError(
                "\(arguments.joined(separator: " ")) did not finish in \(timeout) s:\n\(process.log)")
        }
        return CommandResult(status: process.exitCode ?? -1, output: process.log)
    }

    /// Starts `arguments` as `user` in the background; its output goes to a file in `directory`.
    public static func spawn(
        _ arguments: [String], asUser user: String? = "nobody", environment: [String: String], in directory: URL
    ) throws -> ChildProcess {
        try spawn(
            arguments, asUser: user, environment: environment,
            logFile: directory.appendingPathComponent("spawned-\(UUID().uuidString).out"))
    }

    private static func spawn(
        _ arguments: [String], asUser user: String?, environment: [String: String], logFile: URL
    ) throws -> ChildProcess {
        guard let first = arguments.first else { throw TestEnvironmentError("no command to run") }
        let program = if first.hasPrefix("/") { first } else { try Executables.find(first).path }
        var command = [program] + arguments.dropFirst()
        if let user { command = try prefix(asUser: user) + command }
        return try ChildProcess(
            URL(fileURLWithPath: command[0]), Array(command.dropFirst()), environment: environment, logFile: logFile)
    }
}

/// `text` quoted for `/bin/sh`.
private func quoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}
