import Foundation
import Glibc
import TestBasics
import TestSupport

/// The bus messages of one client's life (`Tests/Clients/client_life.py`, run as ``BenchBus/loadUser`` on a
/// connection of its own: `CreateClient`, `Set` of `DesktopId` and `RequestedAccuracyLevel`, `Start`, the first
/// `LocationUpdated`, `GetAll` of its Location, `Stop`, `DeleteClient`, disconnecting), counted with a bus monitor
/// from the client's `Hello` until the bus falls quiet, and split by who causes them.
struct LifeMessages: Sendable {
    /// Every message of the life.
    var total = 0
    /// The client's calls and their answers, and what the bus says of its connection (`Hello`, `NameAcquired`,
    /// `NameOwnerChanged`, `NameLost`): the same for any service.
    var clients = 0
    /// The signals the service sends: to the client and broadcast.
    var serviceSignals = 0
    /// What the service sent and answered, in order: its signals (`PropertiesChanged` with the names of the changed
    /// properties) and its replies to the client's `Start`.
    var serviceSequence: [String] = []

    /// What the service adds: its signals, and its own calls and what they set off (the caller's credentials,
    /// polkit's checks and polkitd's own lookups, logind).
    var service: Int { total - clients }
    /// The service's own calls and what they set off.
    var serviceCalls: Int { service - serviceSignals }

    static let script = ProjectPaths.clients.appendingPathComponent("client_life.py")

    /// Records a life of a later client of `app` on `bench`'s bus (the service's one-time setup and polkit's first
    /// answer done, as on a desktop): a first life, not counted, makes it one. With `othersActive`, other clients of
    /// `app` are being served meanwhile (at 1 fix/s), which makes it one already: what concerns their client objects
    /// is left out, and the bus counts as quiet after 0.4 s without a message instead of 1 s.
    @concurrent
    static func count(on bench: BenchBus, app: String, othersActive: Bool = false) async throws -> LifeMessages {
        let quiet = othersActive ? 0.4 : 1
        if !othersActive { _ = try life(on: bench, app: app, quiet: quiet) }
        var (client, messages) = try life(on: bench, app: app, quiet: quiet)
        if othersActive {
            // The life's client object is the one its first call on a client names.
            let clientsRoot = "/org/freedesktop/GeoClue2/Client/"
            guard
                let own = messages.first(where: { $0.sender == client && $0.path?.hasPrefix(clientsRoot) == true })?
                    .path
            else { throw TestEnvironmentError("the client of the life called no client object") }
            messages.removeAll {
                guard let path = $0.path, path.hasPrefix(clientsRoot) else { return false }
                return path != own && !path.hasPrefix(own + "/")
            }
        }
        var counts = LifeMessages(total: messages.count)
        for message in messages {
            let aboutClient =
                message.sender == "org.freedesktop.DBus" && message.destination == nil
                && message.strings.contains(client)
            if message.kind == .signal, message.sender != "org.freedesktop.DBus", message.sender != client {
                counts.serviceSignals += 1
                let changed = message.changedProperties
                counts.serviceSequence.append(
                    changed.isEmpty ? message.member ?? "?" : "PropertiesChanged(\(changed.joined(separator: ",")))")
            } else if message.destination == client, message.answers?.hasSuffix(".Start") == true {
                counts.clients += 1
                counts.serviceSequence.append("\(message.label)")
            } else if message.sender == client || message.destination == client || aboutClient {
                counts.clients += 1
            }
        }
        return counts
    }

    /// Runs one life and returns the client's unique name and what the bus carried meanwhile.
    private static func life(on bench: BenchBus, app: String, quiet: Double) throws -> (String, [BusMessage]) {
        let bus = bench.bus
        let monitor = BusMonitor(bus: bus)
        try monitor.start()
        defer { monitor.stop() }
        let client = try Unprivileged.spawn(
            ["/usr/bin/python3", script.path, bus.address, app, "life"], asUser: BenchBus.loadUser,
            environment: bus.environment, in: bus.directory)
        defer { client.stop() }
        let status = try client.wait(timeout: 60)
        guard status == 0, client.log.contains("located ") else {
            throw TestEnvironmentError("a client life failed (exit \(status)):\n\(client.log)")
        }
        try monitor.settle(quiet: quiet)
        let name = client.log.split(separator: "\n").first { $0.hasPrefix("name ") }.map { String($0.dropFirst(5)) }
        let messages = monitor.stop()
        guard let name, let hello = messages.firstIndex(where: { $0.member == "Hello" && $0.sender == name }) else {
            throw TestEnvironmentError("the monitor saw no Hello of the client")
        }
        return (name, Array(messages[hello...]))
    }
}
