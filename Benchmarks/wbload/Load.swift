import DBus
import Loop
import TestBasics
import TestSupport

/// One GeoClue client made by the load: its path, when its setup began, and when its signals arrived.
@BusActor
final class LoadClient {
    let path: ObjectPath
    let connection: LoadConnection
    /// Monotonic nanoseconds when `CreateClient` was sent.
    let createdAt: Int64
    /// Monotonic nanoseconds when the first `LocationUpdated` arrived.
    private(set) var firstUpdateAt: Int64?
    /// Its matches: `LocationUpdated`, and `PropertiesChanged` of the client interface.
    var subscriptions: [SignalSubscription] = []
    private var waiter: CheckedContinuation<Void, Never>?

    init(path: ObjectPath, connection: LoadConnection, createdAt: Int64) {
        self.path = path
        self.connection = connection
        self.createdAt = createdAt
    }

    func updateArrived(at time: Int64) {
        connection.updates += 1
        guard firstUpdateAt == nil else { return }
        firstUpdateAt = time
        waiter?.resume()
        waiter = nil
    }

    /// Milliseconds from `CreateClient` to the first `LocationUpdated`, waiting up to `timeout`; nil when none came.
    func timeToFirstUpdate(timeout: Duration) async -> Double? {
        if firstUpdateAt == nil {
            let timer = EventLoop.main.schedule(after: timeout) { [weak self] in
                self?.waiter?.resume()
                self?.waiter = nil
            }
            await withCheckedContinuation { waiter = $0 }
            EventLoop.main.cancel(timer)
        }
        return firstUpdateAt.map { Double($0 - createdAt) / 1e6 }
    }
}

/// One load connection: an app's own, or one of a pool carrying many clients.
@BusActor
final class LoadConnection {
    let connection: Connection
    /// Whether it belongs to a ``LoadPool`` (and outlives its clients).
    let isPooled: Bool
    /// `LocationUpdated` signals received for this connection's clients.
    var updates = 0

    init(address: String, pooled: Bool) throws(DBusError) {
        connection = try Connection.open(address: address)
        isPooled = pooled
    }

    func call(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [])
        async throws(DBusError) -> [DBusValue]
    {
        try await connection.call(
            destination: GeoClueTestClient.service, path: path, interface: interface, member: member,
            arguments: arguments, timeout: .seconds(120))
    }

    /// `CreateClient`, matches for its `LocationUpdated` and `PropertiesChanged` (as a GDBus proxy of the client has),
    /// `DesktopId`, `RequestedAccuracyLevel` 8, `Start`.
    func startClient(desktopId: String) async throws(DBusError) -> LoadClient {
        let createdAt = monotonicNanoseconds()
        let reply = try await call(GeoClueTestClient.managerPath, GeoClueTestClient.managerInterface, "CreateClient")
        guard let path = reply.first?.objectPath else { throw .failed("CreateClient returned no path") }
        let client = LoadClient(path: path, connection: self, createdAt: createdAt)
        client.subscriptions.append(
            try await connection.subscribe(
                SignalMatch(path: path, interface: GeoClueTestClient.clientInterface, member: "LocationUpdated")
            ) { [weak client] _ in client?.updateArrived(at: monotonicNanoseconds()) })
        // As a GDBus proxy of the client does, which libgeoclue, the portal and browsers use.
        client.subscriptions.append(
            try await connection.subscribe(
                SignalMatch(
                    path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                    stringArguments: [0: GeoClueTestClient.clientInterface])
            ) { _ in })
        let properties = "org.freedesktop.DBus.Properties"
        let interface = GeoClueTestClient.clientInterface
        _ = try await call(
            path, properties, "Set", [.string(interface), .string("DesktopId"), .variant(.string(desktopId))])
        _ = try await call(
            path, properties, "Set", [.string(interface), .string("RequestedAccuracyLevel"), .variant(.uint32(8))])
        _ = try await call(path, interface, "Start")
        return client
    }

    /// `DeleteClient`, and the match removed.
    func delete(_ client: LoadClient) async throws(DBusError) {
        client.subscriptions.forEach { connection.unsubscribe($0) }
        _ = try await call(
            GeoClueTestClient.managerPath, GeoClueTestClient.managerInterface, "DeleteClient",
            [.objectPath(client.path)])
    }
}

/// A few connections sharing the load's clients round-robin.
@BusActor
final class LoadPool {
    let connections: [LoadConnection]
    private var next = 0

    init(address: String, connections count: Int) throws(DBusError) {
        var connections: [LoadConnection] = []
        for _ in 0..<count { connections.append(try LoadConnection(address: address, pooled: true)) }
        self.connections = connections
    }

    /// Every `LocationUpdated` received so far.
    var updates: Int { connections.reduce(0) { $0 + $1.updates } }

    /// Starts `count` clients at once, spread over the connections.
    func startClients(_ count: Int, desktopId: String) async -> Starts {
        var chosen: [LoadConnection] = []
        for _ in 0..<count {
            chosen.append(connections[next % connections.count])
            next += 1
        }
        return await Self.startClients(on: chosen, desktopId: desktopId)
    }

    /// The clients a round started, and the errors of those the service refused.
    struct Starts {
        var clients: [LoadClient] = []
        var refusals: [any Error] = []
    }

    /// Starts one client on each of `connections` (a connection listed twice gets two), all at once.
    static func startClients(on connections: [LoadConnection], desktopId: String) async -> Starts {
        let starts = connections.map { connection in
            Task { @BusActor in try await connection.startClient(desktopId: desktopId) }
        }
        var result = Starts()
        for start in starts {
            switch await start.result {
            case .success(let client): result.clients.append(client)
            case .failure(let error): result.refusals.append(error)
            }
        }
        return result
    }

    /// Deletes `clients` at once.
    func delete(_ clients: [LoadClient]) async throws {
        let deletions = clients.map { client in Task { @BusActor in try await client.connection.delete(client) } }
        for deletion in deletions { try await deletion.value }
    }

    /// Each client's milliseconds from `CreateClient` to its first `LocationUpdated`; clients with none within
    /// `timeout` are left out.
    func timesToFirstUpdate(_ clients: [LoadClient], timeout: Duration) async -> [Double] {
        var times: [Double] = []
        let deadline = ContinuousClock.now + timeout
        for client in clients {
            let remaining = max(deadline - ContinuousClock.now, .milliseconds(1))
            if let time = await client.timeToFirstUpdate(timeout: remaining) { times.append(time) }
        }
        return times
    }

    func close() { connections.forEach { $0.connection.close() } }
}

/// Watches `org.freedesktop.GeoClue2` change owners on the bus and notes the wall-clock time of each change.
@BusActor
final class NameWatch {
    let connection: Connection
    /// Wall-clock seconds when the name was last taken, and released.
    private(set) var ownedAt: Double?
    private(set) var releasedAt: Double?

    init(address: String) async throws(DBusError) {
        connection = try Connection.open(address: address)
        _ = try await connection.subscribe(
            SignalMatch(
                sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                stringArguments: [0: GeoClueTestClient.service])
        ) { [weak self] message in
            let now = ProcessFigures.wallSeconds()
            if message.arguments().last?.string?.isEmpty == false {
                self?.ownedAt = now
            } else {
                self?.releasedAt = now
            }
        }
    }

    func reset() {
        ownedAt = nil
        releasedAt = nil
    }

    /// Waits until the name is owned; throws after `timeout`.
    func waitUntilOwned(timeout: Duration = .seconds(20)) async throws -> Double {
        let deadline = ContinuousClock.now + timeout
        while ownedAt == nil {
            guard ContinuousClock.now < deadline else { throw TestEnvironmentError("the service did not own its name") }
            try await Task.sleep(for: .milliseconds(1))
        }
        return ownedAt!
    }

    /// Waits until the name is released; throws after `timeout`.
    func waitUntilReleased(timeout: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + timeout
        while releasedAt == nil {
            guard ContinuousClock.now < deadline else { throw TestEnvironmentError("the service kept its name") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
