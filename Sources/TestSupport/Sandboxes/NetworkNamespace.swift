import Foundation
import TestBasics

/// A network namespace of the tests' own, held open by a sleeping process: its loopback up and a veth pair
/// (`wan0`, `wan1`) up with `wan0` on 192.0.2.10/24 and 198.51.100.10/24, and no default route until the test adds
/// one. Processes run in it through ``launcher``; its routes change through ``ip(_:)``; the machine's own network is
/// never touched.
public final class NetworkNamespace: @unchecked Sendable {
    /// The process holding the namespace.
    public let holder: ChildProcess
    private let nsenter: String
    private let ipCommand: String
    private let directory: URL

    /// Makes the namespace and returns once its links are up.
    public init() throws {
        directory = try TemporaryDirectory.make(prefix: "whereabouts-netns")
        nsenter = try Executables.find("nsenter").path
        let ipCommand = try Executables.find("ip").path
        self.ipCommand = ipCommand
        let setup = [
            "link set lo up", "link add wan0 type veth peer name wan1", "link set wan0 up", "link set wan1 up",
            "address add 192.0.2.10/24 dev wan0", "address add 198.51.100.10/24 dev wan0",
        ].map { "\(ipCommand) \($0)" }.joined(separator: " && ")
        holder = try ChildProcess(
            try Executables.find("unshare"), ["--net", "/bin/sh", "-c", "\(setup) && exec sleep 100000"],
            logFile: directory.appendingPathComponent("holder.log"))
        try Wait.until("the network namespace to be set up", timeout: 20) {
            guard holder.isRunning else { throw TestEnvironmentError("unshare --net failed:\n\(holder.log)") }
            return (try? self.ip(["-o", "address", "show", "dev", "wan0"]))?.contains("198.51.100.10") == true
        }
    }

    /// The command that runs what follows it in the namespace (`nsenter`, which execs it).
    public var launcher: [String] { [nsenter, "--net=/proc/\(holder.pid)/ns/net", "--"] }

    /// Runs `ip ARGUMENTS` in the namespace and returns its output; throws when it fails.
    @discardableResult
    public func ip(_ arguments: [String]) throws -> String {
        let command = launcher + [ipCommand] + arguments
        let process = try ChildProcess(
            URL(fileURLWithPath: command[0]), Array(command.dropFirst()),
            logFile: directory.appendingPathComponent("ip-\(UUID().uuidString).out"))
        let status = try process.wait(timeout: 20)
        guard status == 0 else {
            throw TestEnvironmentError("ip \(arguments.joined(separator: " ")) failed:\n\(process.log)")
        }
        return process.log
    }

    /// Ends the namespace.
    public func stop() {
        holder.stop(grace: 1)
        try? FileManager.default.removeItem(at: directory)
    }
}
