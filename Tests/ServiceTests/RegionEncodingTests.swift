import DBus
import Foundation
import TestSupport
import Testing

@testable import Whereabouts

/// The client interface as the checked-in contract declares it.
func checkedInClientInterface() throws -> InterfaceSpec {
    let file = ProjectPaths.root.appendingPathComponent("dbus/io.github.whereabouts1.Client.xml")
    return try #require(try InterfaceXML.parse(contentsOf: file).interfaces["io.github.whereabouts1.Client"])
}

/// The signature of `member`'s arguments of `direction`, concatenated, as the contract declares them.
func contractSignature(_ member: MethodSpec?, _ direction: ArgDirection) -> String? {
    member.map { $0.args.filter { $0.direction == direction }.map(\.type).joined() }
}

@Suite("Regions: the library's encoding of the contract, without a service")
struct RegionEncodingTests {
    let home = Region(id: "home", latitude: 52.5163, longitude: 13.3777, radius: 150)

    /// The options of `region`'s `AddRegion` call.
    func options(_ region: Region) throws -> [String: DBusValue] {
        let arguments = try region.addRegionArguments()
        return try #require(arguments.last?.stringKeyedEntries).mapValues(\.unwrapped)
    }

    @Test func addRegionHasTheContractsSignature() throws {
        let contract = try checkedInClientInterface()
        let arguments = try Region(
            id: "home", latitude: 1, longitude: 2, radius: 3, dwell: .seconds(60), expires: 4_000_000_000_000
        ).addRegionArguments()
        #expect(arguments.map(\.signature).joined() == contractSignature(contract.method("AddRegion"), .in))
        #expect(contractSignature(contract.method("AddRegion"), .out) == "d")
        #expect(contractSignature(contract.method("RemoveRegion"), .in) == "s")
        #expect(contractSignature(contract.method("ListRegions"), .out) == "a(sddda{sv})")
        #expect(contractSignature(contract.method("PendingRegionEvents"), .out) == "a(sstddd)")
        #expect(contract.signal("RegionChanged")?.args.map(\.type).joined() == "sstddd")
        #expect(contract.signal("RegionsRemoved")?.args.map(\.type).joined() == "ass")
    }

    @Test func addRegionSendsTheRegionAndItsNotificationsAlways() throws {
        let arguments = try home.addRegionArguments()
        #expect(Array(arguments.prefix(4)) == [.string("home"), .double(52.5163), .double(13.3777), .double(150)])
        #expect(try options(home) == ["notify-entry": .boolean(true), "notify-exit": .boolean(true)])
        var quiet = home
        quiet.notifyOnEntry = false
        quiet.notifyOnExit = false
        #expect(try options(quiet) == ["notify-entry": .boolean(false), "notify-exit": .boolean(false)])
    }

    @Test(arguments: [
        (Duration.seconds(300), UInt32(300)), (.milliseconds(1500), 2), (.nanoseconds(1), 1),
        (.seconds(Int64(UInt32.max) + 10), UInt32.max),
    ])
    func aDwellIsWholeSecondsRoundedUp(dwell: Duration, seconds: UInt32) throws {
        var region = home
        region.dwell = dwell
        #expect(try options(region)["dwell"] == .uint32(seconds))
    }

    @Test(arguments: [Duration.zero, .seconds(-1)])
    func aDwellTheBusCannotCarryIsAnInvalidArgument(dwell: Duration) {
        var region = home
        region.dwell = dwell
        #expect(throws: LocationError.invalidArgument("dwell: not a positive duration")) {
            try region.addRegionArguments()
        }
    }

    @Test(arguments: [
        (Int64(1_700_000_000_000), UInt64(1_700_000_000)), (1_700_000_000_001, 1_700_000_001), (1, 1),
        (Int64.max, UInt64(Int64.max / 1000 + 1)),
    ])
    func anExpiryIsUnixSecondsRoundedUp(milliseconds: Int64, seconds: UInt64) throws {
        var region = home
        region.expires = milliseconds
        #expect(try options(region)["expires"] == .uint64(seconds))
    }

    @Test(arguments: [Int64(0), -1_000])
    func anExpiryTheBusCannotCarryIsAnInvalidArgument(milliseconds: Int64) {
        var region = home
        region.expires = milliseconds
        #expect(throws: LocationError.invalidArgument("expires: before the Unix epoch")) {
            try region.addRegionArguments()
        }
    }

    @Test func noDwellOrExpiryIsLeftOut() throws {
        let options = try options(home)
        #expect(options["dwell"] == nil && options["expires"] == nil)
    }

    /// A `ListRegions` row.
    func row(_ id: String, _ details: [String: DBusValue]) -> DBusValue {
        .structure([.string(id), .double(52.5), .double(13.4), .double(100), .vardict(details)])
    }

    @Test func aListedRegionReadsEveryDetail() throws {
        let status = try #require(
            RegionStatus(
                listed: row(
                    "office",
                    [
                        "state": .string("dwelling"), "since": .uint64(1_764_514_800_123),
                        "notify-entry": .boolean(false), "notify-exit": .boolean(true), "dwell": .uint32(600),
                        "expires": .uint64(1_800_000_000),
                    ])))
        #expect(
            status
                == RegionStatus(
                    region: Region(
                        id: "office", latitude: 52.5, longitude: 13.4, radius: 100, notifyOnEntry: false,
                        notifyOnExit: true, dwell: .seconds(600), expires: 1_800_000_000_000),
                    state: .dwelling, since: 1_764_514_800_123))
    }

    @Test func aListedRegionsZerosAndMissingDetailsAreTheDefaults() throws {
        let zeros = try #require(
            RegionStatus(
                listed: row(
                    "a",
                    [
                        "state": .string("unknown"), "since": .uint64(0), "notify-entry": .boolean(true),
                        "notify-exit": .boolean(true), "dwell": .uint32(0), "expires": .uint64(0),
                    ])))
        let bare = try #require(RegionStatus(listed: row("a", [:])))
        let expected = RegionStatus(
            region: Region(id: "a", latitude: 52.5, longitude: 13.4, radius: 100), state: .unknown, since: nil)
        #expect(zeros == expected)
        #expect(bare == expected)
    }

    @Test func aListedRegionsUnknownStateAndHugeTimesAreBounded() throws {
        let status = try #require(
            RegionStatus(
                listed: row(
                    "a", ["state": .string("hovering"), "since": .uint64(.max), "expires": .uint64(.max)])))
        #expect(status.state == .unknown && status.since == .max && status.region.expires == .max)
    }

    @Test func aListedRowOfAnotherShapeIsSkipped() {
        #expect(RegionStatus(listed: .structure([.string("a"), .double(1), .double(2), .double(3)])) == nil)
        #expect(
            RegionStatus(listed: .structure([.string("a"), .double(1), .double(2), .uint32(3), .vardict([:])])) == nil
        )
        #expect(RegionStatus(listed: .string("a")) == nil)
    }

    @Test func aChangeReadsTheSignalsArguments() throws {
        let values: [DBusValue] = [
            .string("home"), .string("inside"), .uint64(1_764_514_800_000), .double(52.5), .double(13.4), .double(15),
        ]
        #expect(
            RegionEvent(values, wasPending: true)
                == RegionEvent(
                    id: "home", state: .inside, timestamp: 1_764_514_800_000, latitude: 52.5, longitude: 13.4,
                    accuracy: 15, wasPending: true))
        let unknown = try #require(
            RegionEvent(
                [.string("home"), .string("unknown"), .uint64(.max), .double(.nan), .double(.nan), .double(.nan)],
                wasPending: false))
        #expect(unknown.state == .unknown && unknown.timestamp == .max && unknown.latitude.isNaN)
        #expect(!unknown.wasPending)
        #expect(RegionEvent(Array(values.prefix(5)), wasPending: false) == nil)
        #expect(
            RegionEvent([.string("home"), .string("inside"), .int64(1)] + values.suffix(3), wasPending: false) == nil)
    }

    @Test(arguments: ["inside", "outside", "dwelling", "unknown"])
    func everyStateOfTheContractIsKnown(name: String) {
        #expect(RegionState(rawValue: name)?.rawValue == name)
    }

    @Test func aRemovalReadsTheSignalsArguments() {
        #expect(
            RegionNotice(removed: [.strings(["a", "b"]), .string("expired")])
                == .removed(ids: ["a", "b"], reason: "expired"))
        #expect(RegionNotice(removed: [.strings(["a"])]) == nil)
        #expect(RegionNotice(removed: [.string("a"), .string("expired")]) == nil)
    }

    @Test(arguments: [
        (DBusError.Name.invalidArgs, LocationError.invalidArgument("radius: over 100000")),
        ("io.github.whereabouts1.Error.LimitsExceeded", .limitsExceeded),
        ("io.github.whereabouts1.Error.PermissionDenied", .permissionDenied("radius: over 100000")),
        ("io.github.whereabouts1.Error.ServicesDisabled", .servicesDisabled),
        (DBusError.Name.limitsExceeded, .other(name: DBusError.Name.limitsExceeded, message: "radius: over 100000")),
    ])
    func theServicesRefusalsMapOntoLocationErrors(name: String, expected: LocationError) {
        #expect(LocationError(DBusError(name: name, message: "radius: over 100000")) == expected)
    }
}

@Suite("Regions: the whereabouts CLI's command line, without a service")
struct RegionCommandLineTests {
    /// Runs the CLI with a bus address nothing listens on, and returns its exit code and output.
    func run(_ arguments: [String]) throws -> (code: Int32, output: String) {
        let directory = try TemporaryDirectory.make(prefix: "whereabouts-region-cli")
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = try ChildProcess(
            try ProjectPaths.product("whereabouts"), arguments,
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(directory.path)/no-bus"],
            logFile: directory.appendingPathComponent("cli.log"))
        try process.wait(timeout: 30)
        return (process.exitCode ?? -1, process.log)
    }

    @Test(arguments: [
        (["region"], "region needs add, list, remove or watch"),
        (["region", "move"], "region takes add, list, remove or watch, not 'move'"),
        (["region", "add", "home", "52.5", "13.4"], "region add needs an id, a latitude, a longitude and a radius"),
        (["region", "add", "--dwell", "52.5", "13.4", "100"], "region add needs an id"),
        (["region", "add", "home", "north", "13.4", "100"], "region add needs a latitude in degrees, not 'north'"),
        (["region", "add", "home", "52.5", "13.4", "inf"], "region add needs a radius in metres, not 'inf'"),
        (["region", "add", "home", "52.5", "13.4", "100", "--dwell", "0"], "--dwell needs a positive number"),
        (["region", "add", "home", "52.5", "13.4", "100", "--expires", "0"], "--expires needs a time in Unix seconds"),
        (["region", "add", "home", "52.5", "13.4", "100", "--expires", "1.5"], "not '1.5'"),
        (["region", "add", "home", "52.5", "13.4", "100", "--dwell"], "--dwell needs a value"),
        (["region", "remove"], "region remove needs an id"),
        (["region", "list", "--all-regions"], "unknown option '--all-regions'"),
    ])
    func aBadRegionCommandLineExitsWithStatus2(arguments: [String], message: String) throws {
        let result = try run(arguments)
        #expect(result.code == 2, "\(result.output)")
        #expect(result.output.contains(message), "\(result.output)")
        #expect(result.output.contains("whereabouts region add ID LATITUDE LONGITUDE RADIUS"), "\(result.output)")
    }

    @Test(arguments: [
        ["region", "add", "home", "-33.8568", "151.2153", "50", "--dwell", "1.5", "--expires", "4000000000"],
        ["region", "add", "home", "1", "2", "3", "--no-entry", "--no-exit", "--desktop-id", "org.example.App"],
        ["region", "list", "--json"], ["region", "remove", "home"], ["region", "watch", "--json"],
    ])
    func aGoodRegionCommandLineGoesToTheServiceAndFailsWithoutOne(arguments: [String]) throws {
        let result = try run(arguments)
        #expect(result.code == 1, "\(result.output)")
        #expect(result.output.contains("no location service"), "\(result.output)")
    }

    @Test func theUsageNamesEveryRegionCommandAndOption() throws {
        let result = try run(["--help"])
        #expect(result.code == 0)
        for text in [
            "whereabouts region add", "whereabouts region list", "whereabouts region remove",
            "whereabouts region watch",
            "--dwell", "--expires", "--no-entry", "--no-exit",
        ] {
            #expect(result.output.contains(text), "\(text) missing from\n\(result.output)")
        }
    }
}
