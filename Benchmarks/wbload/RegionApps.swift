import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport

/// The city of the regions bench (`wbload --regions`): the apps' regions and the drive through them, both fixed
/// by the seeds alone, so that every run watches the same circles on the same track.
enum RegionLayout {
    /// The apps, each a connection of its own: `org.example.Regions0` to `org.example.Regions9`, two for each of
    /// ``BenchBus/regionUsers``.
    static let apps = 10
    /// The apps each user runs.
    static let appsPerUser = apps / BenchBus.regionUsers.count
    /// The regions each app adds: 10,000 in all, every app at the daemon's limit per app, every user at its
    /// limit, the daemon at its limit in all.
    static let regionsPerApp = 1000
    /// The middle of the city (Munich), degrees north and east.
    static let centre = (latitude: 48.137, longitude: 11.575)
    /// Every region's centre lies within this many metres of ``centre``, spread evenly over the disc.
    static let spread = 30_000.0
    /// The regions' radii, metres, spread evenly.
    static let radii = 100.0...2000.0
    /// Fixes played before the measured ones, so that the jump to the drive's start is not measured.
    static let warmUpFixes = 100
    /// Fixes played after the measured ones, so that the measurement ends before the simulation does.
    static let tailFixes = 50
    /// How fast the drive is played: the track has a fix a second, played at this many times real time: slow
    /// enough that the daemon, with the regions, keeps up on a busy machine of two cores and no fix is skipped.
    static let fixesPerSecond = 10.0
    /// The first fix's time: 2024-03-15 12:00:00 UTC.
    static let startTime = 1_710_504_000.0
    /// Metres per degree of latitude.
    static let metresPerDegree = 111_320.0

    static let clientInterface = "io.github.whereabouts1.Client"
    static let managerInterface = "io.github.whereabouts1.Manager"

    /// The desktop id of app `index`.
    static func desktopId(_ index: Int) -> String { "org.example.Regions\(index)" }

    /// One region as an app adds it.
    struct Circle: Sendable {
        let id: String
        let latitude: Double
        let longitude: Double
        let radius: Double
    }

    /// The regions of app `index`: SplitMix64 seeded with the index.
    static func regions(ofApp index: Int) -> [Circle] {
        var generator = SplitMix64(seed: UInt64(index))
        return (0..<regionsPerApp).map { number in
            let distance = spread * Double.random(in: 0..<1, using: &generator).squareRoot()
            let bearing = Double.random(in: 0..<(2 * Double.pi), using: &generator)
            let (latitude, longitude) = offset(north: distance * cos(bearing), east: distance * sin(bearing))
            return Circle(
                id: String(format: "region-%04d", number), latitude: latitude, longitude: longitude,
                radius: Double.random(in: radii, using: &generator))
        }
    }

    /// The drive, a fix a second: west to east across the city, 25 km either side of the middle, weaving 10 km
    /// north and south of it (two periods), at a constant pace; `count` fixes.
    static func drive(count: Int) -> [NMEAEpoch] {
        (0..<count).map { index in
            let east = -25_000 + 50_000 * Double(index) / Double(max(count - 1, 1))
            let north = 10_000 * sin(2 * Double.pi * east / 25_000)
            let (latitude, longitude) = offset(north: north, east: east)
            return NMEAEpoch(time: startTime + Double(index), latitude: latitude, longitude: longitude)
        }
    }

    /// The NMEA text of `epochs`, as `Simulate` takes it.
    static func track(_ epochs: [NMEAEpoch]) -> String { epochs.map(\.text).joined() }

    /// How many times the fixes `measured` of `epochs` carry the drive across a region's boundary: a fix inside a
    /// region the fix before it was outside of, or the other way round. Every crossing is a `RegionChanged` (the
    /// fixes are a few metres accurate, far below any radius).
    static func crossings(of epochs: [NMEAEpoch], measured: Range<Int>) -> Int {
        let circles = (0..<apps).flatMap(regions(ofApp:))
        var count = 0
        for circle in circles {
            func inside(_ epoch: NMEAEpoch) -> Bool {
                distance(epoch.latitude, epoch.longitude, circle.latitude, circle.longitude) <= circle.radius
            }
            var was = inside(epochs[measured.lowerBound - 1])
            for index in measured {
                let now = inside(epochs[index])
                if now != was { count += 1 }
                was = now
            }
        }
        return count
    }

    /// The position `north` and `east` metres from ``centre``.
    private static func offset(north: Double, east: Double) -> (Double, Double) {
        let latitude = centre.latitude + north / metresPerDegree
        let longitude = centre.longitude + east / (metresPerDegree * cos(centre.latitude * Double.pi / 180))
        return (latitude, longitude)
    }

    /// The great-circle distance between two positions, metres (haversine, mean Earth radius).
    private static func distance(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let radians = Double.pi / 180
        let dLat = (lat2 - lat1) * radians
        let dLon = (lon2 - lon1) * radians
        let a =
            sin(dLat / 2) * sin(dLat / 2) + cos(lat1 * radians) * cos(lat2 * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * 6_371_008.8 * asin(min(1, a.squareRoot()))
    }
}

/// The apps of the regions bench, in a load child (``LoadChild``) and so run as its user: each on a connection of
/// its own with the client `GetClient` gives it, its `DesktopId` set, counting the `RegionChanged` signals its
/// connection hears. Its commands follow the word `regions`: `connect FIRST COUNT` (apps FIRST..<FIRST+COUNT;
/// answered `ok`), `add` (`ok SECONDS`: every app adds its regions, all apps at once) and `changes` (`changes COUNT`).
@BusActor
final class RegionApps {
    private let address: String
    private var apps: [(index: Int, connection: Connection, client: ObjectPath)] = []
    private var changes = 0

    init(address: String) { self.address = address }

    func perform(_ arguments: [String]) async throws -> String {
        switch arguments {
        case let command where command.count == 3 && command[0] == "connect":
            guard let first = Int(command[1]), let count = Int(command[2]) else {
                throw TestEnvironmentError("regions connect FIRST COUNT: \(command)")
            }
            for index in first..<(first + count) {
                let (connection, client) = try await connect(RegionLayout.desktopId(index))
                apps.append((index, connection, client))
            }
            return "ok"
        case ["add"]:
            let start = monotonicNanoseconds()
            let additions = apps.map { app in
                Task { @BusActor in
                    try await Self.add(RegionLayout.regions(ofApp: app.index), app.connection, app.client)
                }
            }
            for addition in additions { try await addition.value }
            return "ok \(Double(monotonicNanoseconds() - start) / 1e9)"
        case ["changes"]:
            return "changes \(changes)"
        default:
            throw TestEnvironmentError("unknown regions command: \(arguments)")
        }
    }

    /// Closes the apps' connections.
    func close() { apps.forEach { $0.connection.close() } }

    private func connect(_ desktopId: String) async throws -> (Connection, ObjectPath) {
        let connection = try Connection.open(address: address)
        _ = try await connection.subscribe(
            SignalMatch(interface: RegionLayout.clientInterface, member: "RegionChanged")
        ) { [weak self] _ in self?.changes += 1 }
        let reply = try await connection.call(
            destination: GeoClueTestClient.service, path: GeoClueTestClient.managerPath,
            interface: GeoClueTestClient.managerInterface, member: "GetClient", timeout: .seconds(120))
        guard let client = reply.first?.objectPath else { throw TestEnvironmentError("GetClient returned no path") }
        _ = try await connection.call(
            destination: GeoClueTestClient.service, path: client, interface: "org.freedesktop.DBus.Properties",
            member: "Set",
            arguments: [
                .string(GeoClueTestClient.clientInterface), .string("DesktopId"), .variant(.string(desktopId)),
            ],
            timeout: .seconds(120))
        return (connection, client)
    }

    /// `AddRegion` for each of `circles`, one after the other, as one app would.
    private static func add(_ circles: [RegionLayout.Circle], _ connection: Connection, _ client: ObjectPath)
        async throws
    {
        for circle in circles {
            _ = try await connection.call(
                destination: GeoClueTestClient.service, path: client, interface: RegionLayout.clientInterface,
                member: "AddRegion",
                arguments: [
                    .string(circle.id), .double(circle.latitude), .double(circle.longitude), .double(circle.radius),
                    .vardict([:]),
                ],
                timeout: .seconds(120))
        }
    }
}
