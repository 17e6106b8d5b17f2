import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport

/// How much of GeoClue's contract a floor service keeps.
enum FloorKind: String, Sendable, CaseIterable {
    /// The least any service can do: no `PropertiesChanged`, and no question to the bus about the caller.
    case bare
    /// The least a service can do and keep GeoClue's contract: it asks the bus who the caller is before answering
    /// `CreateClient` (one `GetConnectionCredentials`, as a service that authorises must), announces each `Set`
    /// with `PropertiesChanged`, and a `Start` with one `PropertiesChanged` of `Active` and `Location` after its
    /// `LocationUpdated`, as GeoClue does for a client that starts with a fix at hand.
    case contract

    var name: String { self == .bare ? "floor" : "floor keeping the contract" }
}

/// A stand-in GeoClue2 service that keeps nothing, run by `wbload --floor-service ADDRESS bare|contract`: it owns
/// `org.freedesktop.GeoClue2`, answers `CreateClient` with a fresh path, takes `AddAgent`, `DeleteClient` and `Set`
/// of any client property, and answers `Start` with the reply and one `LocationUpdated` to the caller; ``FloorKind``
/// says what else it sends. It checks no authorisation and keeps no state. What a burst of apps costs with it is
/// what the bus, the load and the binding cost for those messages: the floor under any service's figure.
@BusActor
final class FloorManager: ExportedObject {
    private let kind: FloorKind
    private var clients = 0

    init(_ kind: FloorKind) { self.kind = kind }

    let interfaces = [
        InterfaceDescription(
            GeoClueTestClient.managerInterface,
            methods: [
                MethodDescription("GetClient", outputs: [Argument("client", "o")]),
                MethodDescription("CreateClient", outputs: [Argument("client", "o")]),
                MethodDescription("DeleteClient", inputs: [Argument("client", "o")]),
                MethodDescription("AddAgent", inputs: [Argument("id", "s")]),
            ])
    ]

    func handle(_ call: MethodCall, interface: String, method: String) throws(DBusError) -> Reply {
        guard method == "GetClient" || method == "CreateClient" else { return .values([]) }
        clients += 1
        let path = ObjectPath(trusted: "\(FloorClients.root.rawValue)/\(clients)")
        guard kind == .contract else { return .values([.objectPath(path)]) }
        call.connection.credentials(of: call.sender) { _ in call.reply([.objectPath(path)]) }
        return .later
    }

    func property(_ name: String, interface: String) -> DBusValue { .string("") }
}

/// Every client path of ``FloorManager``, served by one object that keeps nothing.
@BusActor
final class FloorClients: ExportedSubtree, ExportedObject {
    static let root = ObjectPath(trusted: "/org/freedesktop/GeoClue2/Client")
    private static let location = ObjectPath(trusted: "/org/freedesktop/GeoClue2/Location/1")
    private static let none = ObjectPath(trusted: "/")
    private let kind: FloorKind

    init(_ kind: FloorKind) { self.kind = kind }

    let interfaces = [
        InterfaceDescription(
            GeoClueTestClient.clientInterface,
            methods: [MethodDescription("Start"), MethodDescription("Stop")],
            properties: [
                PropertyDescription("DesktopId", "s", .readwrite),
                PropertyDescription("RequestedAccuracyLevel", "u", .readwrite),
            ],
            signals: [SignalDescription("LocationUpdated", arguments: [Argument("old", "o"), Argument("new", "o")])])
    ]

    func object(at relativePath: Substring) -> (object: any ExportedObject, owner: String?)? { (self, nil) }

    func childNames(below relativePath: Substring, visibleTo viewer: String?) -> [String] { [] }

    func handle(_ call: MethodCall, interface: String, method: String) throws(DBusError) -> Reply {
        guard method == "Start", let path = call.message.path else { return .values([]) }
        call.reply()
        call.connection.emitSignal(
            path: path, interface: GeoClueTestClient.clientInterface, member: "LocationUpdated",
            arguments: [.objectPath(Self.none), .objectPath(Self.location)], destination: call.sender)
        if kind == .contract {
            call.connection.emitPropertiesChanged(
                path: path, interface: GeoClueTestClient.clientInterface,
                changed: ["Active": .boolean(true), "Location": .objectPath(Self.location)], destination: call.sender)
        }
        return .later
    }

    func property(_ name: String, interface: String) -> DBusValue {
        name == "DesktopId" ? .string("") : .uint32(0)
    }

    func setProperty(_ name: String, interface: String, value: DBusValue, call: MethodCall) throws(DBusError)
        -> Reply
    {
        call.reply()
        if kind == .contract, let path = call.message.path {
            call.connection.emitPropertiesChanged(
                path: path, interface: GeoClueTestClient.clientInterface, changed: [name: value],
                destination: call.sender)
        }
        return .later
    }
}

/// The floor service's connection, serving ``FloorManager`` and ``FloorClients`` under the GeoClue2 name.
@BusActor
final class FloorService {
    private let connection: Connection

    init(address: String, kind: FloorKind) async throws {
        connection = try Connection.open(address: address)
        connection.export(FloorManager(kind), at: GeoClueTestClient.managerPath)
        connection.exportSubtree(FloorClients(kind), at: FloorClients.root)
        guard try await connection.requestName(GeoClueTestClient.service) == .primaryOwner else {
            throw TestEnvironmentError("the floor service could not own \(GeoClueTestClient.service)")
        }
    }

    /// Serves until the bus goes away.
    func serve() async {
        while connection.isConnected { try? await Task.sleep(for: .seconds(1)) }
    }
}

/// `wbload --floor-service ADDRESS bare|contract`: runs a ``FloorService`` on the bus at `ADDRESS` until killed.
func runFloorService(_ arguments: [String]) -> Never {
    guard arguments.count == 2, let kind = FloorKind(rawValue: arguments[1]) else {
        print("usage: wbload --floor-service ADDRESS bare|contract")
        exit(2)
    }
    let address = arguments[0]
    Task.detached {
        do {
            let service = try await FloorService(address: address, kind: kind)
            await service.serve()
            exit(0)
        } catch {
            print("wbload: the floor service: \(error)")
            exit(1)
        }
    }
    while true { pause() }
}

/// What `wbload --floor` measures of one service: each burst's p99, and the CPU each process spent on the largest.
struct BurstFigures: Sendable {
    var runP99: [Int: [Double]] = [:]
    var largestBurstCPU: [CPU] = []

    /// Takes in another run's figures.
    mutating func add(_ run: BurstFigures) {
        runP99.merge(run.runP99) { $0 + $1 }
        largestBurstCPU += run.largestBurstCPU
    }
}

/// The services `wbload --floor` sets side by side: the floors (``FloorKind``) and the real ones.
enum BurstTarget: Sendable, Hashable {
    case floor(FloorKind)
    case service(ServiceKind)

    var name: String {
        switch self {
        case .floor(let kind): kind.name
        case .service(let kind): kind.rawValue
        }
    }
}

/// `wbload --floor`: the bursts of the main run (100, 200 and ``Options/clients`` apps at once, each on its own
/// connection, after a first client that keeps the receiver read), against the two floor services (``FloorKind``)
/// and each service of `--only` or both, on the bench bus. Each of the ``Options/burstRuns`` runs starts each
/// service in turn for one burst of each size, so that a machine that slows down meanwhile slows all alike.
/// Returns the table.
func measureFloor(on bench: BenchBus, _ options: Options) async throws -> String {
    let targets = FloorKind.allCases.map(BurstTarget.floor) + options.services.map(BurstTarget.service)
    let watch = try await NameWatch(address: bench.bus.address)
    var results: [BurstTarget: BurstFigures] = [:]
    for _ in 0..<options.burstRuns {
        for target in targets {
            await watch.reset()
            let run = try await measureBursts(of: target, on: bench, watch: watch, options)
            results[target, default: BurstFigures()].add(run)
        }
    }
    return floorTable(targets: targets, results: results, options: options)
}

/// Starts `target`, runs its bursts once, and stops it, `watch` telling when it owns and has released its name.
private func measureBursts(of target: BurstTarget, on bench: BenchBus, watch: NameWatch, _ options: Options)
    async throws -> BurstFigures
{
    let pid: pid_t
    let stop: @Sendable () async -> Void
    switch target {
    case .floor(let kind):
        let directory = try TemporaryDirectory.make(prefix: "wbload-floor")
        let process = try ChildProcess(
            URL(fileURLWithPath: RemoteLoad.executablePath),
            ["--floor-service", bench.bus.address, kind.rawValue], environment: bench.bus.environment,
            logFile: directory.appendingPathComponent("floor.log"))
        pid = process.pid
        stop = { @concurrent in
            process.stop(grace: 5)
            try? FileManager.default.removeItem(at: directory)
        }
    case .service(let kind):
        let contender = try await makeContender(kind, on: bench.bus)
        try contender.launch()
        pid = try contender.pid
        stop = { @concurrent in contender.shutdown() }
    }
    let figures: BurstFigures
    do {
        _ = try await watch.waitUntilOwned()
        figures = try await runBursts(serviceProcess: pid, target: target, on: bench, options)
    } catch {
        await stop()
        throw error
    }
    await stop()
    try await watch.waitUntilReleased()
    return figures
}

private func runBursts(serviceProcess pid: pid_t, target: BurstTarget, on bench: BenchBus, _ options: Options)
    async throws -> BurstFigures
{
    let load = try LoadFleet(
        address: bench.bus.address, user: BenchBus.loadUser, processes: options.loadProcesses,
        pooledConnections: 1)
    defer { load.quit() }
    let meter = CPUMeter(service: pid, load: load.pids, bus: bench.bus.pid, polkit: bench.polkitPid)
    try await load.registerAgent(as: GeoClueHarness.agentId)
    let keeper = try await load.startKeeper(of: target.name)
    var figures = BurstFigures()
    for size in [100, 200, options.clients] {
        await pause(seconds: 1)
        let start = meter.read()
        let round = try await load.round(size, .own, desktopId: Contender.desktopId, timeout: 60)
        if size == options.clients { figures.largestBurstCPU.append(meter.since(start)) }
        guard round.unserved == 0 else {
            throw TestEnvironmentError(
                "\(target.name): \(round.unserved) of \(size) unserved: \(round.refusal ?? "no refusal")")
        }
        let p99 = Sample(round.times).percentile(99)
        figures.runP99[size, default: []].append(p99)
        log("\(target.name): \(size) at once: p99 \(p99) ms")
        try await load.delete(round)
    }
    try await load.delete(keeper)
    return figures
}

private func floorTable(targets: [BurstTarget], results: [BurstTarget: BurstFigures], options: Options) -> String {
    func milliseconds(_ value: Double) -> String { String(format: "%.0f", value) }
    func seconds(_ value: Double) -> String { String(format: "%.2f", value) }
    let geoClue = results[.service(.geoclue)]
    var header = "| p99 of each run, ms: median (lowest – highest) |"
    var rule = "|---|"
    for target in targets {
        header += " \(target.name) |"
        rule += "---|"
    }
    if geoClue != nil {
        for target in targets where target != .service(.geoclue) {
            header += " \(target.name) / GeoClue |"
            rule += "---|"
        }
    }
    var lines = [header, rule]
    for size in [100, 200, options.clients] {
        var line = "| \(size) apps at once |"
        for target in targets {
            let runs = Sample(results[target]?.runP99[size] ?? [])
            line +=
                " \(milliseconds(runs.median)) (\(milliseconds(runs.values.first ?? .nan)) – \(milliseconds(runs.values.last ?? .nan))) |"
        }
        if let geoClue {
            let theirs = Sample(geoClue.runP99[size] ?? []).median
            for target in targets where target != .service(.geoclue) {
                line += String(format: " %.2f |", Sample(results[target]?.runP99[size] ?? []).median / theirs)
            }
        }
        lines.append(line)
    }
    lines.append("")
    lines.append(
        "| CPU of one burst of \(options.clients), s (median of \(options.burstRuns)) | service | dbus-daemon | load | polkitd |"
    )
    lines.append("|---|---|---|---|---|")
    for target in targets {
        let runs = results[target]?.largestBurstCPU ?? []
        func median(_ part: (CPU) -> Double) -> String { seconds(Sample(runs.map(part)).median) }
        lines.append(
            "| \(target.name) | \(median(\.service)) | \(median(\.bus)) | \(median(\.load)) | \(median(\.polkit)) |")
    }
    let title =
        "wbload --floor: \(options.loadProcesses) load processes, \(options.burstRuns) runs of each burst, "
        + "\(ISO8601DateFormatter().string(from: Date()))\n\n"
    return title + lines.joined(separator: "\n") + "\n"
}
