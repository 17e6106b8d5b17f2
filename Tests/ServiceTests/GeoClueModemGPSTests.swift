import DBus
import Foundation
import Loop
import TestSupport
import Testing

/// GeoClue 2.6's modem GPS source, a real libmm-glib client, against the ModemManager stand-in on a private bus:
/// the modem-path figures (`wbbench --modem`) rest on GeoClue finding the stand-in's modem, setting up its NMEA
/// source and reading the fixes it publishes, as it does with ModemManager.
@Suite("ModemManager stand-in read by GeoClue 2.6 through libmm-glib", .serialized)
@BusActor
struct GeoClueModemGPSTests {
    static let app = "whereabouts-test"

    @Test func geoClueSetsUpTheModemAndReportsItsNMEAFix() async throws {
        let rig = try await GeoClueModemRig(app: Self.app)
        defer { rig.stop() }
        let (modemManager, modem, geoClue) = (rig.modemManager, rig.modem, rig.geoClue)
        let client = try await GeoClueTestClient(bus: rig.bus)
        defer { client.close() }
        _ = try await client.startedClient(desktopId: Self.app, level: 8)
        try await eventually("GeoClue to set up the modem's NMEA source", timeout: .seconds(20)) {
            try modemManager.setupCalls(modem).contains { $0.sources.contains(.gpsNMEA) && $0.error == nil }
        }
        let latitude = 47.25
        var epoch = 0
        while client.locationUpdates.isEmpty && epoch < 100 {
            let sentences = NMEAEpoch(time: NMEA.wallNow(), latitude: latitude, longitude: 11.5).sentences
            try modemManager.pushNMEA(modem, sentences.map { $0.trimmingCharacters(in: .newlines) })
            epoch += 1
            try await Task.sleep(for: .milliseconds(200))
        }
        let update = try #require(client.locationUpdates.first, "no LocationUpdated:\n\(geoClue.log)")
        let reported = try await client.get(update.new, GeoClueTestClient.locationInterface, "Latitude").double
        #expect(reported.map { abs($0 - latitude) < 1e-6 } == true, "\(String(describing: reported))")
        let setup = try #require(try modemManager.setupCalls(modem).first { $0.sources.contains(.gpsNMEA) })
        #expect(setup.signalLocation)
        // A client without a TimeThreshold lets GeoClue ask for every epoch.
        #expect(try modemManager.gpsRefreshRateCalls(modem).map(\.rate).contains(0))
    }
}
