import Foundation
import Glibc
import TestSupport

/// What one round of clients starting at once gave.
struct Round: Sendable {
    /// The group, for ``RemoteLoad/delete(_:)``.
    let group: Int
    /// Milliseconds from `CreateClient` to the first `LocationUpdated`, of the clients served.
    let times: [Double]
    /// Clients refused or given no fix within the round's time.
    let unserved: Int
    /// The first refusal's error, if any.
    let refusal: String?
}

/// The load clients in a child process of their own (``LoadChild``), run as `user`, driven one command at a time.
final class RemoteLoad: @unchecked Sendable {
    private let process: Process
    private let input: FileHandle
    private let output: FileHandle
    private var buffered = Data()

    /// Starts `wbload --load-child` as `user` against the bus at `address`, with `pooledConnections` opened for
    /// the pooled rounds.
    init(address: String, user: String, pooledConnections: Int) throws {
        let toChild = Pipe()
        let fromChild = Pipe()
        process = Process()
        process.executableURL = try Executables.find("setpriv")
        process.arguments =
            try Unprivileged.prefix(asUser: user).dropFirst()
            + [Self.executablePath, "--load-child", address, String(pooledConnections)]
        process.standardInput = toChild
        process.standardOutput = fromChild
        try process.run()
        input = toChild.fileHandleForWriting
        output = fromChild.fileHandleForReading
    }

    /// This program's own path, which the child runs.
    private static var executablePath: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    }

    /// The child's process id, for its CPU time.
    var pid: pid_t { process.processIdentifier }

    /// Sends `command` and returns the answer's words after `expected`; throws on an `error` answer.
    private func exchange(_ command: String, expecting expected: String) throws -> [Substring] {
        input.write(Data((command + "\n").utf8))
        let line = try readLine()
        var words = line.split(separator: " ", omittingEmptySubsequences: true)
        guard words.first.map(String.init) == expected else {
            throw TestEnvironmentError("the load answered \(command) with: \(line)")
        }
        words.removeFirst()
        return words
    }

    private func readLine() throws -> String {
        while true {
            if let end = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[buffered.startIndex..<end], as: UTF8.self)
                buffered.removeSubrange(buffered.startIndex...end)
                return line
            }
            let chunk = output.availableData
            guard !chunk.isEmpty else { throw TestEnvironmentError("the load exited") }
            buffered.append(chunk)
        }
    }

    /// Registers a GeoClue agent as `id` for the load's user (GeoClue answers a user's clients only then).
    @concurrent func registerAgent(as id: String) async throws { _ = try exchange("agent \(id)", expecting: "ok") }

    /// Starts `count` clients at once, each on a connection of its own or on the pool, and waits up to `timeout`
    /// seconds for their first fixes.
    @concurrent func round(_ count: Int, _ mode: ConnectionMode, desktopId: String, timeout: Int) async throws -> Round {
        let words = try exchange("round \(count) \(mode.rawValue) \(desktopId) \(timeout)", expecting: "round")
        guard words.count >= 3, let group = Int(words[0]), let unserved = Int(words[1]) else {
            throw TestEnvironmentError("a round's answer had no group: \(words)")
        }
        let times = words[2] == "-" ? [] : words[2].split(separator: ",").compactMap { Double($0) }
        let refusal = words.count > 3 ? words[3...].joined(separator: " ") : nil
        return Round(group: group, times: times, unserved: unserved, refusal: refusal)
    }

    /// Stops and deletes a round's clients, closing their own connections.
    @concurrent func delete(_ round: Round) async throws { _ = try exchange("delete \(round.group)", expecting: "ok") }

    /// `count` clients created, started and deleted, 500 at a time.
    @concurrent func churn(_ count: Int, _ mode: ConnectionMode, desktopId: String) async throws {
        _ = try exchange("churn \(count) \(mode.rawValue) \(desktopId)", expecting: "ok")
    }

    /// The `LocationUpdated` signals the live clients have received.
    @concurrent func updates() async throws -> Int {
        guard let count = try exchange("updates", expecting: "updates").first.flatMap({ Int($0) }) else {
            throw TestEnvironmentError("the load's update count was not a number")
        }
        return count
    }

    /// Tells the child to quit and waits for it.
    func quit() {
        input.write(Data("quit\n".utf8))
        process.waitUntilExit()
    }
}
