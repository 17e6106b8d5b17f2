import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

/// Cell positioning through the ModemManager stand-in and the loopback Ichnaea server over HTTPS, for what the
/// real ModemManager on the emulated modem (`RealModemManagerTests`, where GSM, UMTS and LTE cells, handovers and
/// the cache run) cannot show: a 5G cell next to the others, each sent with the right fields (the emulated EG25 is an
/// LTE modem, which registers no 5G cell), and a CDMA base station (ModemManager's CDMA support needs a CDMA modem).
@Suite("Cell towers through ModemManager, end to end", .serialized)
@BusActor
struct CellEndToEndTests {
    /// The server, the stand-in and the daemon (not yet started) on one private bus.
    final class Rig: @unchecked Sendable {
        let authority: TestCertificateAuthority
        let server: IchnaeaServer
        let bus: PrivateBus
        let modemManager: ModemManagerMock
        let harness: DaemonHarness

        init(extra: String = "") throws {
            authority = try TestCertificateAuthority.make()
            server = try IchnaeaServer(certificates: authority, latitude: 48.1371, longitude: 11.5754, accuracy: 1200)
            bus = try PrivateBus(extraPolicy: ModemManagerMock.busPolicy)
            modemManager = try ModemManagerMock(bus: bus)
            harness = try DaemonHarness(
                config: """
                    [network]
                    ca-file=\(authority.certificateFile.path)

                    [wifi]
                    url=\(server.url())

                    [3g]
                    enable=true

                    """ + extra, bus: bus)
        }

        /// The cell towers of every geolocate query received so far, in order, each value as text.
        func queriedTowers() throws -> [[String: String]] {
            try server.geolocateQueries().flatMap { request, body in
                guard body["wifiAccessPoints"] == nil, body["considerIp"] as? Bool == false else {
                    throw TestEnvironmentError("a cell query with more than cells: \(request.bodyText)")
                }
                return IchnaeaServer.cellTowers(in: body)
            }
        }

        deinit {
            harness.stop()
            modemManager.stop()
            server.stop()
        }
    }

    /// One radio's serving cell as the network gives it, and the tower it must be sent as.
    struct Case: Sendable {
        let technologies: ModemManagerMock.AccessTechnologies
        let operatorCode: String
        let lac: UInt32
        let tac: UInt32
        let cellID: UInt32
        let radioType: String
        let mobileCountryCode: Int
        let mobileNetworkCode: Int
        let areaCode: Int
    }

    nonisolated static let cases: [Case] = [
        Case(
            technologies: .gsm, operatorCode: "26201", lac: 0x1A2B, tac: 0, cellID: 0x3C4D, radioType: "gsm",
            mobileCountryCode: 262, mobileNetworkCode: 1, areaCode: 0x1A2B),
        Case(
            technologies: .umts, operatorCode: "26202", lac: 0x2B3C, tac: 0, cellID: 0x123_4567, radioType: "wcdma",
            mobileCountryCode: 262, mobileNetworkCode: 2, areaCode: 0x2B3C),
        Case(
            technologies: .lte, operatorCode: "310410", lac: 0, tac: 0x5A1F, cellID: 0x8A1_B2C3, radioType: "lte",
            mobileCountryCode: 310, mobileNetworkCode: 410, areaCode: 0x5A1F),
        Case(
            technologies: .nr5g, operatorCode: "23415", lac: 0, tac: 0x1F_0A3C, cellID: 0x1234_5678, radioType: "nr",
            mobileCountryCode: 234, mobileNetworkCode: 15, areaCode: 0x1F_0A3C),
    ]

    @Test func eachRadiosServingCellIsSentWithItsFieldsAndTheAnswerServed() async throws {
        let rig = try await onOwnThread { try Rig() }
        let mm = rig.modemManager
        let first = Self.cases[0]
        let modem = try await onOwnThread {
            let modem = try mm.addModem(
                capabilities: [.threeGPPCell], state: .registered, accessTechnologies: first.technologies)
            try mm.setServingCell(
                modem, operatorCode: first.operatorCode, lac: first.lac, tac: first.tac, cellID: first.cellID)
            try rig.harness.startDaemon()
            return modem
        }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("cell", "the modem seen") { $0.available && !$0.running }
        #expect(try await onOwnThread { try rig.queriedTowers() }.isEmpty, "asked before any client needed it")
        _ = try await app.startedClient(level: 5)
        try await app.waitFor("a cell fix", timeout: .seconds(15)) { !app.locationUpdates.isEmpty }
        let fix = try #require(try await app.latestLocation())
        // A neighbourhood client is given the cells' answer: the server's position within the accuracy it is told,
        // which is no better than the server's.
        let accuracy = fix["Accuracy"]?.double ?? 0
        let latitude = fix["Latitude"]?.double ?? .nan
        let longitude = fix["Longitude"]?.double ?? .nan
        let metresNorth = (latitude - 48.1371) * 111_195
        let metresEast = (longitude - 11.5754) * 111_195 * cos(48.1371 * Double.pi / 180)
        #expect((metresNorth * metresNorth + metresEast * metresEast).squareRoot() <= accuracy, "\(fix)")
        #expect(accuracy >= 1200 && fix["Description"] == .string("Cell towers"), "\(fix)")

        for (index, cell) in Self.cases.enumerated() {
            if index > 0 {
                // Another operator's network, found as a network gives it: the modem searches, then registers.
                try await onOwnThread {
                    try mm.setState(modem, .searching)
                    try mm.setAccessTechnologies(modem, cell.technologies)
                    try mm.setServingCell(
                        modem, operatorCode: cell.operatorCode, lac: cell.lac, tac: cell.tac, cellID: cell.cellID)
                    try mm.setState(modem, .registered)
                }
            }
            let sent = try await onOwnThread {
                var towers: [[String: String]] = []
                try Wait.until("a query for the \(cell.radioType) cell", timeout: 15) {
                    towers = try rig.queriedTowers().filter {
                        $0["radioType"] == cell.radioType && $0["cellId"] == "\(cell.cellID)"
                    }
                    return !towers.isEmpty
                }
                return towers
            }
            let tower = try #require(sent.last)
            #expect(
                tower == [
                    "radioType": cell.radioType, "mobileCountryCode": "\(cell.mobileCountryCode)",
                    "mobileNetworkCode": "\(cell.mobileNetworkCode)", "locationAreaCode": "\(cell.areaCode)",
                    "cellId": "\(cell.cellID)",
                ], "\(tower)")
        }
    }

    @Test func cdmaServesTheBaseStationsPositionAtOneKilometre() async throws {
        let rig = try await onOwnThread { try Rig(extra: "[cdma]\nenable=true\n") }
        let mm = rig.modemManager
        try await onOwnThread {
            let modem = try mm.addModem(capabilities: [.cdmaBaseStation], state: .registered, accessTechnologies: [])
            try mm.setCDMABaseStation(modem, latitude: 40.7128, longitude: -74.006)
            try rig.harness.startDaemon()
        }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("cdma", "the modem seen") { $0.available }
        _ = try await app.startedClient(level: 8)
        try await app.waitFor("a CDMA fix", timeout: .seconds(15)) { !app.locationUpdates.isEmpty }
        let fix = try #require(try await app.latestLocation())
        #expect(fix["Latitude"]?.double == 40.7128 && fix["Longitude"]?.double == -74.006, "\(fix)")
        #expect(fix["Accuracy"]?.double == 1000 && fix["Description"] == .string("CDMA base station"), "\(fix)")
        #expect(try await onOwnThread { try rig.server.requests }.isEmpty, "a base station position was looked up")
    }
}
