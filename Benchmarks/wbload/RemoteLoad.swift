import Foundation
import Glibc
import TestBasics
import TestSupport

/// What one round of clients starting at once gave.
struct Round: Sendable {
    /// Each child's group of the round, for ``LoadFleet/delete(_:)``.
    let groups: [Int]
    /// Milliseconds from `CreateClient` to the first `LocationUpdated`, of the clients served.
    let times: [Double]
    /// Clients refused or given no fix within the round's time.
    let unserved: Int
    /// The first refusal's error, if any.
    let refusal: String?
}

/// The load clients in several child processes (``LoadChild``), as apps are processes of their own: a round's
/// clients are shared out among them and start at once. (One process holding 1000 connections would spend most
/// of its time in `poll(2)` over all of them, a cost no real app has.)
final class LoadFleet: @unchecked Sendable {
    private let children: [RemoteLoad]

    /// Starts `processes` children as `user` against the bus at `address`, sharing `pooledConnections` among them.
    init(address: String, user: String, processes: Int, pooledConnections: Int) throws {
        var children: [RemoteLoad] = []
        for index in 0..<processes {
            let share = Self.share(of: pooledConnections, child: index, among: processes)
            children.append(try RemoteLoad(address: address, user: user, pooledConnections: max(share, 1)))
        }
        self.children = children
    }

    /// The children's process ids, for their CPU time.
    var pids: [pid_t] { children.map(\.pid) }

    private static func share(of count: Int, child index: Int, among processes: Int) -> Int {
        count / processes + (index < count % processes ? 1 : 0)
    }

    /// Registers a GeoClue agent as `id` for the load's user, from the first child.
    func registerAgent(as id: String) async throws { try await children[0].registerAgent(as: id) }

    /// Starts `count` clients at once, shared out among the children, and waits up to `timeout` seconds for
    /// their first fixes.
    @concurrent func round(_ count: Int, _ mode: ConnectionMode, desktopId: String, timeout: Int) async throws -> Round
    {
        let shares = children.indices.map { Self.share(of: count, child: $0, among: children.count) }
        for (child, share) in zip(children, shares) where share > 0 {
            child.send("round \(share) \(mode.rawValue) \(desktopId) \(timeout)")
        }
        var groups: [Int] = []
        var times: [Double] = []
        var unserved = 0
        var refusal: String?
        for (child, share) in zip(children, shares) {
            guard share > 0 else {
                groups.append(-1)
                continue
            }
            let part = try child.roundAnswer()
            groups.append(part.groups[0])
            times += part.times
            unserved += part.unserved
            refusal = refusal ?? part.refusal
        }
        return Round(groups: groups, times: times, unserved: unserved, refusal: refusal)
    }

    /// Starts the one client that keeps the service's receiver read for the rounds after it, as a desktop with any
    /// location user has one, waiting up to `timeout` seconds for its first fix; without one, throws naming
    /// `service`, with what `serviceLog` then gives.
    @concurrent func startKeeper(
        of service: String, timeout: Int = 20, serviceLog: @Sendable () -> String = { "" }
    ) async throws -> Round {
        let keeper = try await round(1, .own, desktopId: Contender.desktopId, timeout: timeout)
        guard keeper.times.count == 1 else {
            let log = serviceLog()
            throw TestEnvironmentError(
                "no fix reached the first client of \(service) (\(keeper.refusal ?? "no refusal"))"
                    + (log.isEmpty ? "" : ":\n" + log))
        }
        return keeper
    }

    /// Stops and deletes a round's clients, closing their own connections.
    @concurrent func delete(_ round: Round) async throws {
        let owners = zip(children, round.groups).filter { $0.1 >= 0 }
        for (child, group) in owners { child.send("delete \(group)") }
        for (child, _) in owners { _ = try child.answer(expecting: "ok") }
    }

    /// `count` clients created, started and deleted, 500 at a time, shared out among the children.
    @concurrent func churn(_ count: Int, _ mode: ConnectionMode, desktopId: String) async throws {
        let shares = children.indices.map { Self.share(of: count, child: $0, among: children.count) }
        for (child, share) in zip(children, shares) where share > 0 {
            child.send("churn \(share) \(mode.rawValue) \(desktopId)")
        }
        for (child, share) in zip(children, shares) where share > 0 { _ = try child.answer(expecting: "ok") }
    }

    /// The `LocationUpdated` signals the live clients have received.
    @concurrent func updates() async throws -> Int {
        children.forEach { $0.send("updates") }
        var total = 0
        for child in children {
            guard let count = try child.answer(expecting: "updates").first.flatMap({ Int($0) }) else {
                throw TestEnvironmentError("the load's update count was not a number")
            }
            total += count
        }
        return total
    }

    /// Tells the children to quit and waits for them.
    func quit() { children.forEach { $0.quit() } }
}

/// One child of the load (``LoadChild``), run as `user`, driven one command at a time.
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
    static var executablePath: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    }

    /// The child's process id, for its CPU time.
    var pid: pid_t { process.processIdentifier }

    /// Sends one command line.
    func send(_ command: String) { input.write(Data((command + "\n").utf8)) }

    /// Reads the next answer and returns its words after `expected`; throws on any other answer.
    func answer(expecting expected: String) throws -> [Substring] {
        let line = try readLine()
        var words = line.split(separator: " ", omittingEmptySubsequences: true)
        guard words.first.map(String.init) == expected else {
            throw TestEnvironmentError("the load answered: \(line)")
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
    @concurrent func registerAgent(as id: String) async throws {
        send("agent \(id)")
        _ = try answer(expecting: "ok")
    }

    /// The answer to a `round` command sent before.
    func roundAnswer() throws -> Round {
        let words = try answer(expecting: "round")
        guard words.count >= 3, let group = Int(words[0]), let unserved = Int(words[1]) else {
            throw TestEnvironmentError("a round's answer had no group: \(words)")
        }
        let times = words[2] == "-" ? [] : words[2].split(separator: ",").compactMap { Double($0) }
        let refusal = words.count > 3 ? words[3...].joined(separator: " ") : nil
        return Round(groups: [group], times: times, unserved: unserved, refusal: refusal)
    }

    /// Tells the child to quit and waits for it.
    func quit() {
        send("quit")
        process.waitUntilExit()
    }
}
