import DBus
import Foundation
import Loop
import TestBasics
import TestSupport
import Testing
import Whereabouts

@Suite("The sky in view, end to end")
@BusActor
struct SatellitesEndToEndTests {
    static let ours = "io.github.whereabouts1.Client"
    static let oursLocation = "io.github.whereabouts1.Location"

    /// One second of a receiver seeing four GPS satellites, one SBAS and two GLONASS, using two GPS and one GLONASS
    /// in a 3D fix; the C/N0 of GPS 5 changes with the second, so that every epoch's sky differs.
    static func epoch(_ second: Int) -> String {
        let time = String(format: "1200%02d.00", second % 60)
        return [
            "GPGGA,\(time),4800.0000,N,01100.0000,E,1,08,0.9,545.4,M,46.9,M,,",
            "GNGSA,A,3,05,13,,,,,,,,,,,1.8,0.9,1.5,1",
            "GNGSA,A,3,70,,,,,,,,,,,,1.8,0.9,1.5,2",
            "GPGSV,2,1,05,05,60,100,\(30 + second % 20),13,30,200,40,20,10,300,,24,05,010,22",
            "GPGSV,2,2,05,46,25,150,35",
            "GLGSV,1,1,02,70,45,060,33,71,12,250,",
            "GPRMC,\(time),A,4800.0000,N,01100.0000,E,0.0,0.0,150324,,,A",
        ].map(sentence).joined(separator: "\r\n") + "\r\n"
    }

    /// Feeds an epoch every 100 ms for `seconds` seconds of the receiver.
    private func feed(_ pty: PseudoTerminal, from first: Int, count: Int) async throws {
        for second in first..<first + count {
            pty.write(Self.epoch(second))
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    private func changes(_ app: GeoClueTestClient) -> [[DBusValue]] {
        app.signals.filter { $0.member == "SatellitesChanged" }.compactMap { $0.arguments().first?.elements }
    }

    @Test func anExactClientsOwnerAloneSeesTheSkyAndTheFixType() async throws {
        let pty = try PseudoTerminal()
        let harness = try DaemonHarness(config: "[network-nmea]\nenable=true\ndevice=\(pty.slavePath)\nbaud=9600\n")
        defer { harness.stop() }
        try harness.startDaemon()
        let exact = try await GeoClueTestClient(bus: harness.bus)
        defer { exact.close() }
        let exactClient = try await exact.startedClient()
        let city = try await GeoClueTestClient(bus: harness.bus)
        defer { city.close() }
        let cityClient = try await city.startedClient(level: 4)
        let intruder = try await GeoClueTestClient(bus: harness.bus)
        defer { intruder.close() }

        #expect(try await exact.get(exactClient, Self.ours, "Satellites").elements?.isEmpty == true)
        _ = try await city.getAll(cityClient, Self.ours)
        let feeding = ContinuousClock.now
        try await feed(pty, from: 0, count: 25)
        try await exact.waitFor("SatellitesChanged") { changes(exact).count >= 2 }

        // The daemon may still be reading the feed, and a change is signalled at most once a second: wait until the
        // sky it serves is the one it signalled last.
        var sky: [DBusValue] = []
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            sky = try #require(try await exact.get(exactClient, Self.ours, "Satellites").elements)
            if changes(exact).last.map({ String(describing: $0) }) == String(describing: sky) { break }
            try #require(ContinuousClock.now < deadline, "the sky served never was the one signalled last")
            try await Task.sleep(for: .milliseconds(50))
        }
        let fed = ContinuousClock.now - feeding
        let rows = sky.map { $0.fields ?? [] }
        #expect(
            rows.map { "\($0[0].string ?? "") \($0[1].uint32 ?? 0)\($0[5].bool == true ? " used" : "")" } == [
                "gps 5 used", "gps 13 used", "gps 20", "gps 24", "glonass 6 used", "glonass 7", "sbas 133",
            ])
        #expect(rows[1][2].double == 30 && rows[1][3].double == 200 && rows[1][4].double == 40)
        #expect(rows[2][4].double?.isNaN == true, "a satellite not tracked has a NaN C/N0")
        let signalled = exact.signals.filter { $0.member == "SatellitesChanged" }
        #expect(signalled.allSatisfy { $0.destination != nil && $0.path == exactClient })
        // Ten epochs a second, each a different sky: at most a change a second, however long the feed took on a
        // loaded machine (a change per epoch would be 25; the rule itself is held on a manual clock in SkyPacerTests).
        let seconds = Int((Double(fed.components.seconds) + Double(fed.components.attoseconds) / 1e18).rounded(.up))
        #expect(changes(exact).count <= seconds + 1, "\(changes(exact).count) SatellitesChanged in \(fed)")

        let location = try await exact.get(exactClient, GeoClueTestClient.clientInterface, "Location").objectPath!
        #expect(try await exact.get(location, Self.oursLocation, "FixType") == .string("3d"))
        #expect(try await exact.get(location, Self.oursLocation, "HDOP") == .double(0.9))
        #expect(try await exact.get(location, Self.oursLocation, "VDOP") == .double(1.5))
        #expect(try await exact.get(location, Self.oursLocation, "PDOP") == .double(1.8))

        await expectDBusError(DBusError.Name.accessDenied) {
            _ = try await city.get(cityClient, Self.ours, "Satellites")
        }
        #expect(try await city.getAll(cityClient, Self.ours)["Satellites"] == nil)
        #expect(try await city.getAll(cityClient, Self.ours)["Available"] != nil)
        #expect(changes(city).isEmpty)
        let cityLocation = try await city.get(cityClient, GeoClueTestClient.clientInterface, "Location").objectPath!
        #expect(try await city.get(cityLocation, Self.oursLocation, "FixType") == .string("none"))
        #expect(try await city.get(cityLocation, Self.oursLocation, "HDOP").double?.isNaN == true)
        await expectDBusError(DBusError.Name.accessDenied) {
            _ = try await intruder.get(exactClient, Self.ours, "Satellites")
        }
        #expect(changes(intruder).isEmpty)
    }

    @Test func aGeoClueClientIsSentNothingNew() async throws {
        let pty = try PseudoTerminal()
        let harness = try DaemonHarness(config: "[network-nmea]\nenable=true\ndevice=\(pty.slavePath)\nbaud=9600\n")
        defer { harness.stop() }
        try harness.startDaemon()
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        _ = try await app.startedClient()
        try await feed(pty, from: 0, count: 15)
        _ = try await app.waitForUpdates(1)
        _ = try await app.get(GeoClueTestClient.managerPath, GeoClueTestClient.managerInterface, "InUse")
        #expect(changes(app).isEmpty, "only an owner that used Whereabouts' interface is told")
    }

    @Test func theLibraryAndTheCLIShowTheSky() async throws {
        let pty = try PseudoTerminal()
        let harness = try DaemonHarness(config: "[network-nmea]\nenable=true\ndevice=\(pty.slavePath)\nbaud=9600\n")
        defer { harness.stop() }
        try harness.startDaemon()
        // A client of the test's keeps the receiver running for the CLI after the library's stream ended.
        let keeper = try await GeoClueTestClient(bus: harness.bus)
        defer { keeper.close() }
        _ = try await keeper.startedClient()
        let manager = try LocationManager(desktopId: "whereabouts-test", address: harness.bus.address)
        defer { manager.close() }
        let feeding = Task { @BusActor in try await feed(pty, from: 0, count: 50) }
        defer { feeding.cancel() }
        let expected = ["gps 5", "gps 13", "gps 20", "gps 24", "glonass 6", "glonass 7", "sbas 133"]
        var seen: [SatelliteInView] = []
        for try await sky in manager.satellites() where sky.count == expected.count {
            seen = sky
            break
        }
        #expect(seen.map { "\($0.constellation) \($0.id)" } == expected)
        #expect(seen.map(\.usedInFix) == [true, true, false, false, true, false, false])
        #expect(seen[1].elevation == 30 && seen[1].azimuth == 200 && seen[1].signalStrength == 40)
        #expect(seen[2].signalStrength == nil, "not tracked")
        await manager.endStreams()

        let json = try runCLI(harness, ["satellites", "--count", "1", "--json", "--desktop-id", "whereabouts-test"])
        #expect(json.code == 0, "\(json.output)")
        let rows = try #require(
            try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]], "\(json.output)")
        #expect(rows.map { "\($0["constellation"] as? String ?? "") \($0["id"] as? Int ?? 0)" } == expected)
        #expect(
            rows.map { Set($0.keys) }.allSatisfy {
                $0 == ["constellation", "id", "elevation", "azimuth", "cn0", "used"]
            })
        #expect(rows[2]["cn0"] is NSNull)
        let text = try runCLI(harness, ["satellites", "--count", "1", "--desktop-id", "whereabouts-test"])
        #expect(text.output.hasPrefix("7 in view, 3 used\n"), "\(text.output)")
        #expect(text.output.contains("gps 20\tel 10°\taz 300°\tnot tracked\n"), "\(text.output)")
    }
}
