import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

/// Cell positioning through the ModemManager stand-in and the loopback Ichnaea server over HTTPS: the daemon
/// sends each serving cell with the right fields for GSM, UMTS, LTE and 5G, and a neighbourhood client gets the
/// server's answer.
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
                try await onOwnThread {
                    try mm.setAccessTechnologies(modem, cell.technologies)
                    try mm.setServingCell(
                        modem, operatorCode: cell.operatorCode, lac: cell.lac, tac: cell.tac, cellID: cell.cellID)
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

    @Test func anExactClientGetsTheAnswerAsIsAndAKnownCellIsNotAskedAgain() async throws {
        let rig = try await onOwnThread { try Rig() }
        let mm = rig.modemManager
        try await onOwnThread {
            let modem = try mm.addModem(capabilities: [.threeGPPCell], state: .registered, accessTechnologies: .lte)
            try mm.setServingCell(modem, operatorCode: "26201", lac: 0, tac: 0x5A1F, cellID: 0x8A1_B2C3)
            try rig.harness.startDaemon()
        }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("cell", "the modem seen") { $0.available }
        let client = try await app.startedClient(level: 8)
        try await app.waitFor("a cell fix", timeout: .seconds(15)) { !app.locationUpdates.isEmpty }
        let fix = try #require(try await app.latestLocation())
        #expect(fix["Latitude"]?.double == 48.1371 && fix["Longitude"]?.double == 11.5754, "\(fix)")
        #expect(fix["Accuracy"]?.double == 1200, "\(fix)")
        let harness = rig.harness
        let status = try await onOwnThread { try runCLI(harness, ["status"]) }.output
        #expect(status.contains("  modem Modem/0: registered; sources 3gpp-lac-ci\n"), "\(status)")
        #expect(
            status.contains("  cell /org/freedesktop/ModemManager1/Modem/0: lte 262-1 TAC 5A1F CI 8A1B2C3\n"),
            "\(status)")
        _ = try await app.call(client, GeoClueTestClient.clientInterface, "Stop")
        try await app.waitForProviderRow("cell", "the provider stopped") { !$0.running }
        let updates = app.locationUpdates.count
        _ = try await app.call(client, GeoClueTestClient.clientInterface, "Start")
        try await app.waitFor("the known cell's fix again", timeout: .seconds(15)) {
            app.locationUpdates.count > updates
        }
        #expect(try await onOwnThread { try rig.queriedTowers() }.count == 1, "the known cell was asked again")
    }

    /// Once no client runs, the daemon turns the signalling it turned on back off and ModemManager empties the
    /// modem's `Location`: a cell changed meanwhile is the one served at the next start, never the answer of the
    /// cell the phone has left.
    @Test func aCellLeftWhileNoClientRanIsNotServedAtTheNextStart() async throws {
        let rig = try await onOwnThread { try Rig() }
        let mm = rig.modemManager
        let modem = try await onOwnThread {
            let modem = try mm.addModem(capabilities: [.threeGPPCell], state: .registered, accessTechnologies: .lte)
            try mm.setServingCell(modem, operatorCode: "26201", lac: 0, tac: 0x5A1F, cellID: 0x8A1_B2C3)
            try rig.harness.startDaemon()
            return modem
        }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("cell", "the modem seen") { $0.available }
        let client = try await app.startedClient(level: 8)
        try await app.waitFor("the first cell's fix", timeout: .seconds(15)) { !app.locationUpdates.isEmpty }
        _ = try await app.call(client, GeoClueTestClient.clientInterface, "Stop")
        try await onOwnThread {
            try Wait.until("signalling off again", timeout: 10) { try !mm.locationSetup(modem).signalsLocation }
            try mm.setServingCell(modem, operatorCode: "26201", lac: 0, tac: 0x5A20, cellID: 0x8A1_B2C4)
            try rig.server.setLocation(latitude: 48.2, longitude: 11.6, accuracy: 1500)
        }
        let updates = app.locationUpdates.count
        _ = try await app.call(client, GeoClueTestClient.clientInterface, "Start")
        try await app.waitFor("a fix after the new start", timeout: .seconds(15)) {
            app.locationUpdates.count > updates
        }
        let fix = try #require(try await app.latestLocation())
        #expect(fix["Latitude"]?.double == 48.2 && fix["Accuracy"]?.double == 1500, "the cell left was served: \(fix)")
        let towers = try await onOwnThread { try rig.queriedTowers() }
        #expect(towers.map { $0["cellId"] } == ["\(0x8A1_B2C3)", "\(0x8A1_B2C4)"], "\(towers)")
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
