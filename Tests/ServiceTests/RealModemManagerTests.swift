import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

/// The daemon against Debian's own ModemManager 1.20 driving the project's emulated Quectel EG25
/// (``RealModemManager``), rather than the stand-in: the serving cell reaches the loopback Ichnaea server as
/// ModemManager reports it, handovers are followed, and the receiver's NMEA reaches an exact client through
/// ModemManager's Location interface, whichever talker it uses, and an unplugged modem leaves no cell provider.
/// Each test runs its own ModemManager.
@Suite("The real ModemManager, end to end", .serialized)
@BusActor
struct RealModemManagerTests {
    /// The Ichnaea server, ModemManager with the emulated modem (enabled and registered) and the daemon (not yet
    /// started) on one private bus.
    final class Rig: @unchecked Sendable {
        let authority: TestCertificateAuthority
        let server: IchnaeaServer
        let bus: PrivateBus
        let modemManager: RealModemManager
        let harness: DaemonHarness

        init(config: String) throws {
            authority = try TestCertificateAuthority.make()
            server = try IchnaeaServer(certificates: authority, latitude: 48.1371, longitude: 11.5754, accuracy: 1200)
            bus = try PrivateBus(extraPolicy: try RealModemManager.busPolicy())
            do {
                modemManager = try RealModemManager(bus: bus)
                harness = try DaemonHarness(
                    config: """
                        [network]
                        ca-file=\(authority.certificateFile.path)

                        [wifi]
                        url=\(server.url())

                        """ + config, bus: bus)
            } catch {
                bus.stop()
                throw error
            }
        }

        /// The cell towers of every geolocate query received so far, in order, each value as text.
        func queriedTowers() throws -> [[String: String]] {
            try server.geolocateQueries().flatMap { IchnaeaServer.cellTowers(in: $0.body) }
        }

        /// Waits for a query for the cell `cellID` and returns the last such tower.
        func tower(_ cellID: UInt32, radio: String) throws -> [String: String] {
            var towers: [[String: String]] = []
            try Wait.until("a query for the \(radio) cell \(cellID)\n\(modemManager.log)", timeout: 20) {
                towers = try queriedTowers().filter { $0["radioType"] == radio && $0["cellId"] == "\(cellID)" }
                return !towers.isEmpty
            }
            return towers[towers.count - 1]
        }

        deinit {
            harness.stop()
            modemManager.stop()
            server.stop()
            bus.stop()
        }
    }

    @Test func theServingCellAndItsHandoversReachTheServerAndTheAnswerIsServed() async throws {
        let rig = try await onOwnThread { try Rig(config: "[3g]\nenable=true\n") }
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("cell", "the modem seen", timeout: .seconds(20)) { $0.available }
        _ = try await app.startedClient(level: 8)
        try await app.waitFor("a cell fix", timeout: .seconds(20)) { !app.locationUpdates.isEmpty }
        let fix = try #require(try await app.latestLocation())
        #expect(fix["Latitude"]?.double == 48.1371 && fix["Longitude"]?.double == 11.5754, "\(fix)")
        #expect(fix["Accuracy"]?.double == 1200, "\(fix)")
        // The emulated modem starts on LTE cell 262-01, TAC 3C4D, CI 1A2B3C4.
        let first = try await onOwnThread { try rig.tower(0x1A2_B3C4, radio: "lte") }
        #expect(
            first == [
                "radioType": "lte", "mobileCountryCode": "262", "mobileNetworkCode": "1",
                "locationAreaCode": "\(0x3C4D)", "cellId": "27440068",
            ], "\(first)")

        // A handover within the operator's LTE network, then to its UMTS network (a LAC instead of a TAC, after
        // a second of searching).
        let mm = rig.modemManager
        try await onOwnThread {
            try rig.server.setLocation(latitude: 48.2, longitude: 11.6, accuracy: 1500)
            try mm.setCell(
                .init(
                    radio: "lte", mobileCountryCode: "262", mobileNetworkCode: "01", areaCode: 0x3C4E,
                    cellID: 0x1A2_B3C5))
        }
        let second = try await onOwnThread { try rig.tower(0x1A2_B3C5, radio: "lte") }
        #expect(second["locationAreaCode"] == "\(0x3C4E)" && second["mobileNetworkCode"] == "1", "\(second)")
        try await app.waitFor("the new cell's answer", timeout: .seconds(20)) {
            app.locationUpdates.count > 1
        }
        let moved = try #require(try await app.latestLocation())
        #expect(moved["Latitude"]?.double == 48.2 && moved["Accuracy"]?.double == 1500, "\(moved)")

        try await onOwnThread {
            try mm.setCell(
                .init(
                    radio: "umts", mobileCountryCode: "262", mobileNetworkCode: "02", areaCode: 0x2B3C,
                    cellID: 0x123_4567))
        }
        let third = try await onOwnThread { try rig.tower(0x123_4567, radio: "wcdma") }
        #expect(
            third == [
                "radioType": "wcdma", "mobileCountryCode": "262", "mobileNetworkCode": "2",
                "locationAreaCode": "\(0x2B3C)", "cellId": "\(0x123_4567)",
            ], "\(third)")
    }

    @Test func anExactClientGetsTheModemsNMEAFixThroughModemManager() async throws {
        let rig = try await onOwnThread { try Rig(config: "[modem-gps]\nenable=true\n") }
        let mm = rig.modemManager
        try await onOwnThread {
            try mm.move(latitude: 52.5163, longitude: 13.3777)
            try mm.setNMEA(true, talker: "GN")
            try rig.harness.startDaemon()
        }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "the modem seen", timeout: .seconds(20)) { $0.available }
        let path = try await app.getClient()
        let client = GeoClueTestClient.clientInterface
        try await app.set(path, client, "DesktopId", .string("whereabouts-test"))
        try await app.set(path, client, "RequestedAccuracyLevel", .uint32(8))
        _ = try await app.call(path, client, "Start")
        try await app.waitFor("a fix from the modem's receiver", timeout: .seconds(30)) {
            !app.locationUpdates.isEmpty
        }
        let fix = try #require(try await app.latestLocation())
        #expect(abs((fix["Latitude"]?.double ?? .nan) - 52.5163) < 1e-5, "\(fix)")
        #expect(abs((fix["Longitude"]?.double ?? .nan) - 13.3777) < 1e-5, "\(fix)")
        #expect(fix["Description"] == .string("Modem GNSS"), "\(fix)")

        // The receiver moves and speaks with `$GP` talkers.
        try await onOwnThread {
            try mm.setNMEA(true, talker: "GP")
            try mm.move(latitude: 52.5200, longitude: 13.4050)
        }
        let deadline = ContinuousClock.now + .seconds(20)
        var moved: [String: DBusValue] = [:]
        while !(abs((moved["Latitude"]?.double ?? .nan) - 52.52) < 1e-5) {
            guard ContinuousClock.now < deadline else {
                Issue.record("no fix of the moved receiver; the last was \(moved)")
                return
            }
            try await Task.sleep(for: .milliseconds(200))
            moved = try await app.latestLocation() ?? [:]
        }
        #expect(abs((moved["Longitude"]?.double ?? .nan) - 13.405) < 1e-5, "\(moved)")
    }

    @Test func theModemUnpluggedLeavesNoCellProvider() async throws {
        let rig = try await onOwnThread { try Rig(config: "[3g]\nenable=true\n") }
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("cell", "the modem seen", timeout: .seconds(20)) { $0.available }
        let mm = rig.modemManager
        try await onOwnThread { try mm.remove() }
        try await app.waitForProviderRow("cell", "the modem gone", timeout: .seconds(20)) { !$0.available }
    }
}
