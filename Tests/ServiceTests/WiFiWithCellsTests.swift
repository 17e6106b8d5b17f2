import DBus
import Foundation
import Glibc
import Loop
import TestSupport
import Testing

/// Wi-Fi and cells both on: one query carries the access points and the modem's serving cell. An answer finer
/// than a cell's is the Wi-Fi fix, and no query of the cell alone follows; one as coarse as a cell's is the cell's
/// answer, served as the cell fix and kept in the `cells` file, so a restarted daemon neither sends the cell again
/// nor asks for it. A Wi-Fi answer the cells' answer contradicts is neither served nor kept.
@Suite("Wi-Fi lookups carrying the serving cells, end to end", .serialized)
@BusActor
struct WiFiWithCellsTests {
    /// A geolocate query the server received: its access points' addresses and its cell towers, each value as text.
    struct Query {
        var addresses: [String]
        var towers: [[String: String]]
    }

    static let tower = [
        "radioType": "lte", "mobileCountryCode": "262", "mobileNetworkCode": "1", "locationAreaCode": "\(0x5A1F)",
        "cellId": "\(0x8A1_B2C3)",
    ]

    /// The rig with one registered LTE modem serving cell 262-01 TAC 5A1F, the daemon launched.
    private func launchedRig() async throws -> (NetworkPositioningRig, ModemManagerMock) {
        let rig = try await NetworkPositioningRig.make(extra: "[3g]\nenable=true\n")
        let bus = rig.bus
        let mm = try await onOwnThread { try ModemManagerMock(bus: bus) }
        try await onOwnThread {
            let modem = try mm.addModem(capabilities: [.threeGPPCell], state: .registered, accessTechnologies: .lte)
            try mm.setServingCell(modem, operatorCode: "26201", lac: 0, tac: 0x5A1F, cellID: 0x8A1_B2C3)
        }
        try await rig.launch()
        return (rig, mm)
    }

    /// Every geolocate query the server received, in order.
    private func queries(_ rig: NetworkPositioningRig) async throws -> [Query] {
        let server = rig.server
        return try await onOwnThread {
            try server.geolocateQueries().map { _, body in
                let points = body["wifiAccessPoints"] as? [[String: Any]] ?? []
                return Query(
                    addresses: points.compactMap { $0["macAddress"] as? String },
                    towers: IchnaeaServer.cellTowers(in: body))
            }
        }
    }

    @Test func oneQueryCarriesTheAccessPointsAndTheServingCell() async throws {
        let (rig, mm) = try await launchedRig()
        defer {
            rig.stop()
            mm.stop()
        }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("cell", "the modem seen") { $0.available }
        _ = try await app.startedClient(level: 8)
        try await app.waitFor("a Wi-Fi fix", timeout: .seconds(15)) { !app.locationUpdates.isEmpty }
        let cellRow = try await app.waitForProviderRow("cell", "the answer told to the cell provider") {
            $0.details["last-outcome"] == .string("access-points-placed")
        }
        #expect(cellRow.details["carried-by-wifi"] == .uint32(1) && cellRow.details["requests"] == .uint32(0))
        let sent = try await queries(rig)
        #expect(sent.count == 1, "\(sent)")
        #expect(sent.first?.addresses == NetworkPositioningRig.usableAddresses, "\(sent)")
        #expect(sent.first?.towers == [Self.tower], "\(sent)")
        let fix = try #require(try await app.latestLocation())
        #expect(fix["Description"] == .string("WiFi") && fix["Accuracy"]?.double == 42, "\(fix)")
        let row = try await app.providerRow("wifi")
        #expect(row.details["last-outcome"] == .string("position"), "\(row)")
    }

    @Test func aCoarseAnswerIsTheCellsAndOutlivesARestart() async throws {
        let (rig, mm) = try await launchedRig()
        defer {
            rig.stop()
            mm.stop()
        }
        let server = rig.server
        try await onOwnThread { try server.setLocation(latitude: 52.52, longitude: 13.41, accuracy: 4000) }
        var app = try await GeoClueTestClient(bus: rig.bus)
        try await app.waitForProviderRow("cell", "the modem seen") { $0.available }
        _ = try await app.startedClient(level: 8)
        try await app.waitFor("the cell fix", timeout: .seconds(15)) { !app.locationUpdates.isEmpty }
        var fix = try #require(try await app.latestLocation())
        #expect(fix["Description"] == .string("Cell towers") && fix["Accuracy"]?.double == 4000, "\(fix)")
        var sent = try await queries(rig)
        #expect(sent.count == 1 && sent.first?.towers == [Self.tower] && sent.first?.addresses.count == 3, "\(sent)")
        let cellsFile = rig.harness.file("cells")
        try await onOwnThread {
            try Wait.until("the cell's answer saved", timeout: 10) {
                (try? String(contentsOf: cellsFile, encoding: .utf8))?.contains("lte:262:1:23071:144814787") == true
            }
        }
        app.close()

        let harness = rig.harness
        let launcher = rig.launcher
        try await onOwnThread {
            harness.daemon?.stop()
            try harness.startDaemon(launcher: launcher)
        }
        app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("cell", "the modem seen again") { $0.available }
        _ = try await app.startedClient(level: 8)
        try await app.waitFor("the cell fix after the restart", timeout: .seconds(15)) {
            !app.locationUpdates.isEmpty
        }
        fix = try #require(try await app.latestLocation())
        #expect(fix["Description"] == .string("Cell towers") && fix["Accuracy"]?.double == 4000, "\(fix)")
        try await app.waitForProviderRow("wifi", "Wi-Fi's own lookup answered") {
            $0.details["requests"] == .uint32(1) && $0.details["last-outcome"] != nil
        }
        sent = try await queries(rig)
        #expect(sent.count == 2 && sent.last?.towers == [], "the known cell was sent again: \(sent)")
        let cellRow = try await app.providerRow("cell")
        #expect(cellRow.details["requests"] == .uint32(0) && cellRow.details["carried-by-wifi"] == .uint32(0))
    }

    /// Three access points the home scan does not share, the first of them `byte` in their last address byte.
    private static func elsewhere(_ byte: UInt8) -> [WPASupplicantMock.BSS] {
        var scan: [WPASupplicantMock.BSS] = []
        for index in 0..<3 {
            let address: [UInt8] = [0x00, 0x44, 0x55, 0x66, 0x77, byte + UInt8(index)]
            scan.append(.init(bssid: address, ssid: "shop \(byte)", signal: Int16(-50 - 5 * index)))
        }
        return scan
    }

    @Test func aWiFiAnswerFortyKilometresFromTheCellsAnswerIsNeitherServedNorKept() async throws {
        let (rig, mm) = try await launchedRig()
        defer {
            rig.stop()
            mm.stop()
        }
        let server = rig.server
        // The first query carries the cell and is answered as coarsely as a cell: the cells' answer, ± 2 km.
        try await onOwnThread { try server.setLocation(latitude: 52.52, longitude: 13.41, accuracy: 2000) }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("cell", "the modem seen") { $0.available }
        _ = try await app.startedClient(level: 8)
        try await app.waitFor("the cell fix", timeout: .seconds(15)) { !app.locationUpdates.isEmpty }
        let cellUpdates = app.locationUpdates.count
        // A bad cluster in the database: 40 km north, at ± 30 m.
        try await onOwnThread { try server.setLocation(latitude: 52.88, longitude: 13.41, accuracy: 30) }
        for (scan, disputes) in [(Self.elsewhere(0x10), 1), (Self.elsewhere(0x20), 2)] {
            try rig.wpa?.setScanResults("wlan0", scan)
            let row = try await app.waitForProviderRow("wifi", "answer \(disputes) disputed", timeout: .seconds(40)) {
                $0.details["disputed-answers"] == .uint32(UInt32(disputes))
            }
            #expect(row.details["last-outcome"] == .string("disputed"), "\(row)")
        }
        #expect(app.locationUpdates.count == cellUpdates)
        #expect(try await app.latestLocation()?["Description"] == .string("Cell towers"))
        let sent = try await queries(rig)
        #expect(sent.count == 3 && sent.dropFirst().allSatisfy { $0.towers.isEmpty }, "\(sent)")
        let fusionLines = rig.harness.daemonLog.split(separator: "\n").filter { $0.contains("fusion: ") }
        #expect(fusionLines.count == 1, "logged once: \(fusionLines)")
        #expect(
            fusionLines.first?.contains("wifi (WiFi, ±30 m) is 40.0 km from cell (Cell towers, ±2000 m)") == true,
            "\(fusionLines)")
        // An answer the cells allow is served and kept; the disputed ones never were.
        try await onOwnThread { try server.setLocation(latitude: 52.525, longitude: 13.41, accuracy: 30) }
        try rig.wpa?.setScanResults("wlan0", NetworkPositioningRig.home)
        try await app.waitFor("the Wi-Fi fix near the cells", timeout: .seconds(40)) {
            app.locationUpdates.count > cellUpdates
        }
        #expect(try await app.latestLocation()?["Description"] == .string("WiFi"))
        let positions = rig.harness.file("positions")
        let kept = try await onOwnThread {
            try Wait.until("the answer near the cells kept", timeout: 10) {
                (try? String(contentsOf: positions, encoding: .utf8))?.contains("52.525") == true
            }
            return try String(contentsOf: positions, encoding: .utf8)
        }
        #expect(!kept.contains("52.88"), "\(kept)")
    }
}
