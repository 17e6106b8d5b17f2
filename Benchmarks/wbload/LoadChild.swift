import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport

/// How the load's clients are spread over bus connections.
enum ConnectionMode: String, Sendable {
    /// Each client on a connection of its own, opened before the round and closed with the client: as apps are.
    case own
    /// The clients round-robin over a few connections opened once: a configuration no desktop has, shown beside.
    case pooled
}

/// The load clients, run by `wbload --load-child` as an unprivileged user: polkit answers root without running its
/// rules, so clients of a real user are never root. It reads one command a line from standard input and answers
/// each with one line on standard output (``LoadCommand``); the parent (``RemoteLoad``) reads its CPU from /proc.
@BusActor
final class LoadChild {
    private let address: String
    private let pool: LoadPool
    private var groups: [Int: [LoadClient]] = [:]
    private var nextGroup = 0
    private var agent: GeoClueTestAgent?
    private let regionApps: RegionApps

    init(address: String, pooledConnections: Int) throws(DBusError) {
        self.address = address
        pool = try LoadPool(address: address, connections: pooledConnections)
        regionApps = RegionApps(address: address)
    }

    /// Runs the commands until `quit` or the end of standard input.
    func run(_ commands: AsyncStream<String>) async {
        for await line in commands {
            let words = line.split(separator: " ").map(String.init)
            guard let command = words.first else { continue }
            if command == "quit" { break }
            do {
                answer(try await perform(command, Array(words.dropFirst())))
            } catch {
                answer("error \(String(describing: error).replacingOccurrences(of: "\n", with: " "))")
            }
        }
        agent?.close()
        regionApps.close()
        pool.close()
    }

    private func answer(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    private func perform(_ command: String, _ arguments: [String]) async throws -> String {
        switch (command, arguments.count) {
        case ("agent", 1):
            agent = try await GeoClueTestAgent.registered(address: address, as: arguments[0])
            return "ok"
        case ("round", 4):
            guard let count = Int(arguments[0]), let mode = ConnectionMode(rawValue: arguments[1]),
                let timeout = Int(arguments[3])
            else { throw TestEnvironmentError("bad round: \(arguments)") }
            return try await round(count, mode: mode, desktopId: arguments[2], timeout: .seconds(timeout))
        case ("delete", 1):
            guard let group = Int(arguments[0]), let clients = groups.removeValue(forKey: group) else {
                throw TestEnvironmentError("no group \(arguments[0])")
            }
            try await delete(clients)
            return "ok"
        case ("churn", 3):
            guard let count = Int(arguments[0]), let mode = ConnectionMode(rawValue: arguments[1]) else {
                throw TestEnvironmentError("bad churn: \(arguments)")
            }
            var remaining = count
            while remaining > 0 {
                let batch = min(500, remaining)
                let starts = try await start(batch, mode: mode, desktopId: arguments[2])
                try await delete(starts.clients)
                if let refusal = starts.refusals.first { throw refusal }
                remaining -= batch
            }
            return "ok"
        case ("updates", 0):
            return "updates \(updates)"
        case ("regions", _):
            return try await regionApps.perform(arguments)
        default:
            throw TestEnvironmentError("unknown command: \(command) \(arguments)")
        }
    }

    /// Every `LocationUpdated` the live clients' connections received so far.
    private var updates: Int {
        pool.updates + groups.values.joined().reduce(0) { $0 + ($1.connection.isPooled ? 0 : $1.connection.updates) }
    }

    /// Starts `count` clients at once and waits for their first fixes: `round GROUP UNSERVED MS,MS,… [ERROR]`,
    /// the times of those that got one (`-` for none), and the first refusal's error, if any.
    private func round(_ count: Int, mode: ConnectionMode, desktopId: String, timeout: Duration) async throws
        -> String
    {
        let starts = try await start(count, mode: mode, desktopId: desktopId)
        let times = await pool.timesToFirstUpdate(starts.clients, timeout: timeout)
        let group = nextGroup
        nextGroup += 1
        groups[group] = starts.clients
        let list = times.isEmpty ? "-" : times.map { String(format: "%.3f", $0) }.joined(separator: ",")
        let refusal = starts.refusals.first.map { " \($0)".replacingOccurrences(of: "\n", with: " ") } ?? ""
        return "round \(group) \(count - times.count) \(list)\(refusal)"
    }

    private func start(_ count: Int, mode: ConnectionMode, desktopId: String) async throws -> LoadPool.Starts {
        switch mode {
        case .pooled:
            return await pool.startClients(count, desktopId: desktopId)
        case .own:
            // Connected first, so that the round measures the service and not the connecting.
            var connections: [LoadConnection] = []
            for _ in 0..<count { connections.append(try LoadConnection(address: address, pooled: false)) }
            let starts = await LoadPool.startClients(on: connections, desktopId: desktopId)
            let used = Set(starts.clients.map { ObjectIdentifier($0.connection) })
            for connection in connections where !used.contains(ObjectIdentifier(connection)) {
                connection.connection.close()
            }
            return starts
        }
    }

    private func delete(_ clients: [LoadClient]) async throws {
        try await pool.delete(clients)
        for client in clients where !client.connection.isPooled { client.connection.connection.close() }
    }
}

/// `wbload --load-child ADDRESS POOLED-CONNECTIONS`: raises the open-file limit to the hard one (each client may
/// have a connection of its own), then serves ``LoadChild``'s commands until told to quit.
func runLoadChild(_ arguments: [String]) -> Never {
    guard arguments.count == 2, let pooled = Int(arguments[1]) else {
        print("usage: wbload --load-child ADDRESS POOLED-CONNECTIONS")
        exit(2)
    }
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    let (commands, continuation) = AsyncStream.makeStream(of: String.self)
    Thread {
        while let line = readLine() { continuation.yield(line) }
        continuation.finish()
    }.start()
    Task.detached {
        do {
            let child = try await LoadChild(address: arguments[0], pooledConnections: pooled)
            await child.run(commands)
            exit(0)
        } catch {
            print("error \(error)")
            exit(1)
        }
    }
    while true { pause() }
}
