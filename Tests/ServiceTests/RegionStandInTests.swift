import DBus
import Foundation
import Loop
import TestBasics
import TestSupport
import Testing
import Whereabouts

/// A stand-in for the service's region members, as the contract describes them, on a private bus: its Manager
/// makes client objects, each answers the region methods from what the test sets and records the calls in order,
/// and hooks let the test send signals at the moments that matter to the library.
@BusActor
final class RegionStandIn {
    static let busName = "org.freedesktop.GeoClue2"
    static let managerPath = ObjectPath("/org/freedesktop/GeoClue2/Manager")!
    static let clientRoot = "/org/freedesktop/GeoClue2/Client"
    static let geoClueManager = "org.freedesktop.GeoClue2.Manager"
    static let geoClueClient = "org.freedesktop.GeoClue2.Client"
    static let whereaboutsManager = "io.github.whereabouts1.Manager"
    static let whereaboutsClient = "io.github.whereabouts1.Client"
    let bus: PrivateBus
    let connection: Connection
    /// The calls received, in order: the member, then what it named.
    private(set) var calls: [String] = []
    /// `PendingRegionEvents`' answer (`sstddd` structures).
    var pending: [DBusValue] = []
    /// `ListRegions`' answer (`(sddda{sv})` structures).
    var listed: [DBusValue] = []
    /// `AddRegion`'s answer.
    var watchedRadius = 100.0
    /// The arguments of the last `AddRegion`.
    private(set) var added: [DBusValue] = []
    /// The error the region methods answer with, when set.
    var failure: DBusError?
    /// Run when a client's `DesktopId` is set, before the answer: the client and the caller.
    var onDesktopId: (@BusActor (ObjectPath, String) -> Void)?
    /// Run before `PendingRegionEvents` is answered: the client and the caller.
    var onPending: (@BusActor (ObjectPath, String) -> Void)?
    private var clients = 0

    init() async throws {
        bus = try PrivateBus()
        connection = try Connection.open(address: bus.address)
        connection.export(StandInManager(self), at: Self.managerPath)
        _ = try await connection.requestName(RegionStandIn.busName)
    }

    func stop() {
        connection.close()
        bus.stop()
    }

    /// Sends the signal `member` of the Whereabouts client interface from `path` to `destination` alone, as the
    /// service sends region signals.
    func emit(_ path: ObjectPath, to destination: String, _ member: String, _ arguments: [DBusValue]) {
        connection.emitSignal(
            path: path, interface: RegionStandIn.whereaboutsClient, member: member, arguments: arguments,
            destination: destination)
    }

    /// Waits until a call `text` has been received.
    func waitForCall(_ text: String) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !calls.contains(text) {
            guard ContinuousClock.now < deadline else { throw TestEnvironmentError("no \(text) in \(calls)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    fileprivate func note(_ call: String) { calls.append(call) }

    fileprivate func createClient() -> ObjectPath {
        clients += 1
        let path = ObjectPath("\(RegionStandIn.clientRoot)/\(clients)")!
        connection.export(StandInClient(self, path), at: path)
        return path
    }

    fileprivate func answer(_ call: MethodCall, _ client: ObjectPath, _ method: String) throws(DBusError) -> Reply {
        note(method)
        if let failure { throw failure }
        switch method {
        case "AddRegion":
            added = call.arguments
            return .values([.double(watchedRadius)])
        case "ListRegions": return .values([.array(element: "(sddda{sv})", listed)])
        case "PendingRegionEvents":
            onPending?(client, call.sender)
            defer { pending = [] }
            return .values([.array(element: "(sstddd)", pending)])
        default: return .values([])
        }
    }
}

/// The stand-in's Manager: GeoClue's, and Whereabouts' (empty) so that the library takes it for Whereabouts.
@BusActor
private final class StandInManager: ExportedObject {
    unowned let service: RegionStandIn
    init(_ service: RegionStandIn) { self.service = service }

    var interfaces: [InterfaceDescription] {
        [
            InterfaceDescription(
                RegionStandIn.geoClueManager,
                methods: [
                    MethodDescription("CreateClient", outputs: [Argument("client", "o")]),
                    MethodDescription("DeleteClient", inputs: [Argument("client", "o")]),
                ]),
            InterfaceDescription(RegionStandIn.whereaboutsManager),
        ]
    }

    func property(_ name: String, interface: String) -> DBusValue { .boolean(false) }

    func handle(_ call: MethodCall, interface: String, method: String) throws(DBusError) -> Reply {
        guard method == "CreateClient" else {
            service.note("DeleteClient")
            return .values([])
        }
        service.note("CreateClient")
        return .values([.objectPath(service.createClient())])
    }
}

/// One client of the stand-in: GeoClue's `DesktopId` and `RequestedAccuracyLevel`, and the region methods.
@BusActor
private final class StandInClient: ExportedObject {
    unowned let service: RegionStandIn
    let path: ObjectPath
    init(_ service: RegionStandIn, _ path: ObjectPath) {
        self.service = service
        self.path = path
    }

    var interfaces: [InterfaceDescription] {
        [
            InterfaceDescription(
                RegionStandIn.geoClueClient,
                properties: [
                    PropertyDescription("DesktopId", "s", .readwrite),
                    PropertyDescription("RequestedAccuracyLevel", "u", .readwrite),
                ]),
            InterfaceDescription(
                RegionStandIn.whereaboutsClient,
                methods: [
                    MethodDescription(
                        "AddRegion",
                        inputs: [
                            Argument("id", "s"), Argument("latitude", "d"), Argument("longitude", "d"),
                            Argument("radius", "d"), Argument("options", "a{sv}"),
                        ], outputs: [Argument("watched_radius", "d")]),
                    MethodDescription("RemoveRegion", inputs: [Argument("id", "s")]),
                    MethodDescription("ListRegions", outputs: [Argument("regions", "a(sddda{sv})")]),
                    MethodDescription("PendingRegionEvents", outputs: [Argument("events", "a(sstddd)")]),
                ]),
        ]
    }

    func property(_ name: String, interface: String) -> DBusValue { name == "DesktopId" ? .string("") : .uint32(0) }

    func setProperty(_ name: String, interface: String, value: DBusValue, call: MethodCall) throws(DBusError)
        -> Reply
    {
        if name == "DesktopId" {
            service.note("DesktopId \(value.unwrapped.string ?? "")")
            service.onDesktopId?(path, call.sender)
        } else {
            service.note(name)
        }
        return .values([])
    }

    func handle(_ call: MethodCall, interface: String, method: String) throws(DBusError) -> Reply {
        try service.answer(call, path, method)
    }
}

/// A `RegionChanged` or `PendingRegionEvents` entry.
func regionChange(_ id: String, _ state: String, _ timestamp: UInt64, _ latitude: Double = 52.5) -> [DBusValue] {
    [.string(id), .string(state), .uint64(timestamp), .double(latitude), .double(13.4), .double(15)]
}

@Suite("Regions: the library and the CLI against a stand-in for the service's region members")
@BusActor
struct RegionStandInTests {
    @Test func theEventsAreThePendingOnesThenTheSignalsToItsOwnClient() async throws {
        let service = try await RegionStandIn()
        defer { service.stop() }
        let manager = try LocationManager(desktopId: "org.example.App", address: service.bus.address)
        defer { manager.close() }
        service.pending = [.structure(regionChange("a", "inside", 1000))]
        // A change signalled as soon as the client is the app's, before the pending ones are read.
        service.onDesktopId = { client, caller in
            service.emit(client, to: caller, "RegionChanged", regionChange("b", "outside", 2000))
        }
        service.onPending = { client, caller in
            let other = ObjectPath("\(RegionStandIn.clientRoot)/999")!
            service.emit(other, to: caller, "RegionChanged", regionChange("not-ours", "inside", 2500))
            service.emit(client, to: caller, "RegionChanged", regionChange("c", "dwelling", 3000))
            service.emit(client, to: caller, "RegionsRemoved", [.strings(["d", "e"]), .string("expired")])
        }
        var notices = manager.regionEvents().makeAsyncIterator()
        func change(_ id: String, _ state: RegionState, _ timestamp: Int64, pending: Bool = false) -> RegionNotice {
            .changed(
                RegionEvent(
                    id: id, state: state, timestamp: timestamp, latitude: 52.5, longitude: 13.4, accuracy: 15,
                    wasPending: pending))
        }
        #expect(try await notices.next() == change("a", .inside, 1000, pending: true))
        #expect(try await notices.next() == change("b", .outside, 2000))
        #expect(try await notices.next() == change("c", .dwelling, 3000))
        #expect(try await notices.next() == .removed(ids: ["d", "e"], reason: "expired"))
        await manager.endStreams()
        try await service.waitForCall("DeleteClient")
        #expect(
            service.calls == [
                "CreateClient", "DesktopId org.example.App", "RequestedAccuracyLevel", "PendingRegionEvents",
                "DeleteClient",
            ])
    }

    @Test func addListAndRemoveUseAClientOfTheAppAndMapTheRefusals() async throws {
        let service = try await RegionStandIn()
        defer { service.stop() }
        let manager = try LocationManager(desktopId: "org.example.App", address: service.bus.address)
        defer { manager.close() }
        let radius = try await manager.addRegion(
            Region(id: "home", latitude: 52.5, longitude: 13.4, radius: 50, notifyOnExit: false, dwell: .seconds(600)))
        #expect(radius == 100)
        #expect(Array(service.added.prefix(4)) == [.string("home"), .double(52.5), .double(13.4), .double(50)])
        #expect(
            service.added.last?.stringKeyedEntries?.mapValues(\.unwrapped) == [
                "notify-entry": .boolean(true), "notify-exit": .boolean(false), "dwell": .uint32(600),
            ])
        service.listed = [
            .structure([
                .string("home"), .double(52.5), .double(13.4), .double(100),
                .vardict(["state": .string("inside"), "since": .uint64(1234), "dwell": .uint32(600)]),
            ])
        ]
        #expect(
            try await manager.regions() == [
                RegionStatus(
                    region: Region(id: "home", latitude: 52.5, longitude: 13.4, radius: 100, dwell: .seconds(600)),
                    state: .inside, since: 1234)
            ])
        try await manager.removeRegion("home")
        service.failure = DBusError(name: "io.github.whereabouts1.Error.LimitsExceeded", message: "1000 regions")
        await #expect(throws: LocationError.limitsExceeded) {
            _ = try await manager.addRegion(Region(id: "one-more", latitude: 0, longitude: 0, radius: 100))
        }
        service.failure = .invalidArgs("id: the app has no region 'nope'")
        await #expect(throws: LocationError.invalidArgument("id: the app has no region 'nope'")) {
            try await manager.removeRegion("nope")
        }
        try await service.waitForCall("DeleteClient")
        let perCall = ["CreateClient", "DesktopId org.example.App", "RequestedAccuracyLevel"]
        #expect(
            Array(service.calls.prefix(11)) == perCall + ["AddRegion", "DeleteClient"] + perCall
                + ["ListRegions", "DeleteClient"] + ["CreateClient"])
    }

    /// Runs the CLI against the stand-in, without holding up the actor that serves it.
    nonisolated func runCLI(_ service: RegionStandIn, _ arguments: [String]) async throws -> (Int32, String) {
        let log = service.bus.directory.appendingPathComponent("cli-\(UUID().uuidString).log")
        let process = try ChildProcess(
            try ProjectPaths.product("whereabouts"), arguments, environment: service.bus.environment, logFile: log)
        try await Task.detached { _ = try process.wait(timeout: 30) }.value
        return (process.exitCode ?? -1, process.log)
    }

    @Test func theCLIPrintsTheRadiusAndTheRegions() async throws {
        let service = try await RegionStandIn()
        defer { service.stop() }
        service.watchedRadius = 120.5
        let add = try await runCLI(service, ["region", "add", "home", "-33.85", "151.2", "120.5", "--no-entry"])
        #expect(add == (0, "120.5\n"))
        service.listed = [
            .structure([
                .string("home \"1\""), .double(52.5163), .double(13.3777), .double(150),
                .vardict([
                    "state": .string("dwelling"), "since": .uint64(1_764_514_800_000), "notify-entry": .boolean(false),
                    "notify-exit": .boolean(true), "dwell": .uint32(600), "expires": .uint64(1_800_000_000),
                ]),
            ]),
            .structure([
                .string("office"), .double(52.52), .double(13.39), .double(100),
                .vardict(["state": .string("unknown"), "since": .uint64(0)]),
            ]),
        ]
        let list = try await runCLI(service, ["region", "list"])
        #expect(list.0 == 0)
        #expect(
            list.1 == """
                home "1"\tdwelling\t52.516300, 13.377700\t150.0 m\tsince 2025-11-30T15:00:00.000Z\tno entry\t\
                dwell 600 s\texpires 2027-01-15T08:00:00.000Z
                office\tunknown\t52.520000, 13.390000\t100.0 m

                """)
        let json = try await runCLI(service, ["region", "list", "--json"])
        #expect(json.0 == 0)
        #expect(
            json.1 == """
                {"id":"home \\"1\\"","state":"dwelling","latitude":52.5163,"longitude":13.3777,"radius":150.0,\
                "since":1764514800000,"notifyOnEntry":false,"notifyOnExit":true,"dwell":600,"expires":1800000000}
                {"id":"office","state":"unknown","latitude":52.52,"longitude":13.39,"radius":100.0,"since":null,\
                "notifyOnEntry":true,"notifyOnExit":true,"dwell":null,"expires":null}

                """)
        for line in json.1.split(separator: "\n") {
            #expect(try JSONSerialization.jsonObject(with: Data(line.utf8)) is [String: Any])
        }
        service.failure = .invalidArgs("id: the app has no region 'nope'")
        let remove = try await runCLI(service, ["region", "remove", "nope"])
        #expect(remove.0 == 1 && remove.1.contains("invalid argument: id: the app has no region 'nope'"))
    }

    @Test func theCLIWatchPrintsOneLinePerEvent() async throws {
        let service = try await RegionStandIn()
        defer { service.stop() }
        service.pending = [.structure(regionChange("home", "inside", 1_764_514_800_000))]
        service.onPending = { client, caller in
            service.emit(
                client, to: caller, "RegionChanged",
                [
                    .string("home"), .string("unknown"), .uint64(1_764_514_860_000), .double(.nan), .double(.nan),
                    .double(.nan),
                ])
            service.emit(client, to: caller, "RegionsRemoved", [.strings(["a", "b"]), .string("expired")])
        }
        for (arguments, expected) in [
            (
                ["region", "watch"],
                "home\tinside\t2025-11-30T15:00:00.000Z\t52.500000, 13.400000 ±15.0 m\tpending\n"
                    + "home\tunknown\t2025-11-30T15:01:00.000Z\t-\na\tremoved\texpired\nb\tremoved\texpired\n"
            ),
            (
                ["region", "watch", "--json"],
                """
                {"id":"home","state":"inside","timestamp":1764514800000,"latitude":52.5,"longitude":13.4,\
                "accuracy":15.0,"pending":true}
                {"id":"home","state":"unknown","timestamp":1764514860000,"latitude":null,"longitude":null,\
                "accuracy":null,"pending":false}
                {"id":"a","state":"removed","reason":"expired"}
                {"id":"b","state":"removed","reason":"expired"}

                """
            ),
        ] {
            let pending = service.pending
            let log = service.bus.directory.appendingPathComponent("watch-\(UUID().uuidString).log")
            let process = try ChildProcess(
                try ProjectPaths.product("whereabouts"), arguments, environment: service.bus.environment,
                logFile: log)
            defer { process.stop() }
            let deadline = ContinuousClock.now + .seconds(20)
            while process.log.split(separator: "\n").count < 4 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(process.log == expected)
            service.pending = pending
        }
    }
}
