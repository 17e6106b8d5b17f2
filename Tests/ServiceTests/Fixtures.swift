import DBus
import Foundation
import Loop
import TestBasics
import TestSupport
import Testing

/// The static location the end-to-end tests serve: the Eiffel Tower, 35 m up, ±10 m.
let staticFile = "# test location\n48.8584\n2.2945\n35\n10\n"

/// A configuration with the static source reading `geolocation` in the harness folder.
let staticConfig = """
    [agent]
    whitelist=geoclue-demo-agent;gnome-shell

    [static-source]
    enable=true
    path=@DIR@/geolocation

    [denied-app]
    allowed=false
    system=false
    users=

    [system-app]
    allowed=true
    system=true
    users=

    [uid4242-app]
    allowed=true
    system=false
    users=4242
    """

/// A running daemon with the static source, and a helper to make test clients.
@BusActor
struct StaticService {
    let harness: DaemonHarness

    init(config: String = staticConfig, files: [String: String] = ["geolocation": staticFile]) throws {
        harness = try DaemonHarness(config: config, files: files)
        try harness.startDaemon()
    }

    func client() async throws -> GeoClueTestClient { try await GeoClueTestClient(bus: harness.bus) }

    func stop() { harness.stop() }
}

/// Expects `body` to fail with the D-Bus error `name` (and, when given, a message containing `text`).
@BusActor
func expectDBusError(
    _ name: String, containing text: String? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    do {
        try await body()
        Issue.record("expected \(name), got success", sourceLocation: sourceLocation)
    } catch let error as DBusError {
        #expect(error.name == name, "\(error)", sourceLocation: sourceLocation)
        if let text { #expect(error.message.contains(text), "\(error)", sourceLocation: sourceLocation) }
    } catch {
        Issue.record("expected \(name), got \(error)", sourceLocation: sourceLocation)
    }
}

/// Writes an NMEA track of `count` fixes, one per second, heading east at 10 m/s from 48.0 N 11.0 E.
func nmeaTrack(count: Int, startSecond: Int = 0) -> String {
    var lines: [String] = []
    for index in 0..<count {
        let total = startSecond + index
        let time = String(format: "12%02d%02d.00", total / 60 % 60, total % 60)
        // 10 m east per second at 48° N: 10 / (111320 * cos 48°) degrees.
        let longitude = 11.0 + Double(index) * 10 / (111_320 * cos(48 * Double.pi / 180))
        let minutes = (longitude - 11) * 60
        let lon = String(format: "011%07.4f", minutes)
        lines.append(sentence("GPGGA,\(time),4800.0000,N,\(lon),E,1,08,0.9,545.4,M,46.9,M,,"))
        lines.append(sentence("GPRMC,\(time),A,4800.0000,N,\(lon),E,19.438,90.0,150324,,,A"))
    }
    return lines.joined(separator: "\r\n") + "\r\n"
}

/// `$body*HH` with the NMEA checksum.
func sentence(_ body: String) -> String {
    let checksum = body.utf8.reduce(UInt8(0), ^)
    return "$" + body + "*" + String(format: "%02X", checksum)
}

/// One row of `io.github.whereabouts1.Manager.Providers`: kind, the lowest client level it serves, whether it can
/// deliver now, whether it runs, and what else it reports.
struct ProviderRow {
    let kind: String
    let level: UInt32
    let available: Bool
    let running: Bool
    let details: [String: DBusValue]
}

extension GeoClueTestClient {
    /// `io.github.whereabouts1.Manager.Providers`, read now.
    func providerRows() async throws -> [ProviderRow] {
        let rows = try await get(GeoClueTestClient.managerPath, "io.github.whereabouts1.Manager", "Providers")
        return try (rows.elements ?? []).map { row in
            guard let fields = row.fields, fields.count == 5, let kind = fields[0].string, let level = fields[1].uint32,
                let available = fields[2].bool, let running = fields[3].bool
            else { throw TestEnvironmentError("a malformed Providers row: \(row)") }
            return ProviderRow(
                kind: kind, level: level, available: available, running: running,
                details: (fields[4].stringKeyedEntries ?? [:]).mapValues(\.unwrapped))
        }
    }

    /// The `Providers` row of the provider `kind`, read now; there must be one.
    func providerRow(_ kind: String) async throws -> ProviderRow {
        let rows = try await providerRows()
        guard let row = rows.first(where: { $0.kind == kind }) else {
            throw TestEnvironmentError("no \(kind) provider in \(rows.map(\.kind))")
        }
        return row
    }

    /// Polls the `Providers` row of `kind` until `condition` holds, up to `timeout`, and returns it.
    @discardableResult
    func waitForProviderRow(
        _ kind: String, _ what: String, timeout: Duration = .seconds(10), _ condition: (ProviderRow) -> Bool
    ) async throws -> ProviderRow {
        let deadline = ContinuousClock.now + timeout
        while true {
            let row = try await providerRow(kind)
            if condition(row) { return row }
            guard ContinuousClock.now < deadline else {
                throw TestEnvironmentError("timed out waiting for \(what); the \(kind) row: \(row)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The `AvailabilityChanged(available, reason)` signals this connection received, in order.
    var availabilityChanges: [(available: Bool, reason: String)] {
        signals.filter { $0.member == "AvailabilityChanged" }.map { message in
            let arguments = message.arguments()
            return (arguments.first?.bool ?? false, arguments.dropFirst().first?.string ?? "")
        }
    }

    /// The values of `io.github.whereabouts1.Manager.Simulating` the Manager announced with `PropertiesChanged`.
    var announcedSimulating: [Bool] {
        signals.compactMap { message in
            guard message.member == "PropertiesChanged", message.path == GeoClueTestClient.managerPath else {
                return nil
            }
            let arguments = message.arguments()
            guard arguments.first?.string == "io.github.whereabouts1.Manager" else { return nil }
            return arguments[1].stringKeyedEntries?["Simulating"]?.bool
        }
    }
}

/// A started exact client of `app` (desktop id `whereabouts-test`) with `timeThreshold`, as the modem suites start one.
@BusActor
func exactClient(_ app: GeoClueTestClient, timeThreshold: UInt32 = 0) async throws -> ObjectPath {
    let client = GeoClueTestClient.clientInterface
    let path = try await app.getClient()
    try await app.set(path, client, "DesktopId", .string("whereabouts-test"))
    try await app.set(path, client, "RequestedAccuracyLevel", .uint32(8))
    try await app.set(path, client, "TimeThreshold", .uint32(timeThreshold))
    _ = try await app.call(path, client, "Start")
    return path
}
