import DBus
import Foundation
import Glibc
import Loop
import TestSupport
import Testing

/// Wi-Fi and cells both on: the Wi-Fi lookup carries the modem's serving cell with the access points, in one
/// query, and its answer is the Wi-Fi fix.
@Suite("Wi-Fi lookups carrying the serving cells, end to end", .serialized)
@BusActor
struct WiFiWithCellsTests {
    @Test func theWiFiQueryCarriesTheAccessPointsAndTheServingCell() async throws {
        let rig = try await NetworkPositioningRig.make(extra: "[3g]\nenable=true\n")
        defer { rig.stop() }
        let bus = rig.bus
        let mm = try await onOwnThread { try ModemManagerMock(bus: bus) }
        defer { mm.stop() }
        try await onOwnThread {
            let modem = try mm.addModem(capabilities: [.threeGPPCell], state: .registered, accessTechnologies: .lte)
            try mm.setServingCell(modem, operatorCode: "26201", lac: 0, tac: 0x5A1F, cellID: 0x8A1_B2C3)
        }
        try await rig.launch()
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("cell", "the modem seen") { $0.available }
        _ = try await app.startedClient(level: 8)
        try await app.waitFor("a Wi-Fi fix", timeout: .seconds(15)) {
            app.signals.contains { $0.member == "LocationUpdated" }
        }
        let server = rig.server
        let combined = try await onOwnThread {
            var combined: (addresses: [String], towers: [[String: String]])?
            try Wait.until("a query with access points and cells", timeout: 15) {
                combined = try server.requests.compactMap { request -> ([String], [[String: String]])? in
                    let body = try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] ?? [:]
                    guard let points = body["wifiAccessPoints"] as? [[String: Any]],
                        let towers = body["cellTowers"] as? [[String: Any]]
                    else { return nil }
                    return (
                        points.compactMap { $0["macAddress"] as? String }, towers.map { $0.mapValues { "\($0)" } }
                    )
                }.first
                return combined != nil
            }
            return combined!
        }
        #expect(combined.addresses == NetworkPositioningRig.usableAddresses, "\(combined)")
        #expect(
            combined.towers == [
                [
                    "radioType": "lte", "mobileCountryCode": "262", "mobileNetworkCode": "1",
                    "locationAreaCode": "\(0x5A1F)", "cellId": "\(0x8A1_B2C3)",
                ]
            ], "\(combined)")
        let row = try await app.providerRow("wifi")
        #expect(row.details["last-outcome"] == .string("position"), "\(row)")
    }
}
