import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

/// The daemon against Debian's own ModemManager 1.20 driving the project's emulated Quectel EG25
/// (``RealModemManager``), one ModemManager for the whole suite (``RealModemManagerSuite``): everything an AT modem
/// can show runs here rather than against the stand-in, so that where the two differ ModemManager decides. The
/// serving cell through LTE, UMTS and GSM, with handovers and operator changes; the receiver's NMEA with either
/// talker; the receiver and signalling set up only while an exact client runs and left as found; the refresh rate
/// from the clients' `TimeThreshold`; polkit refusing `Device.Control` or `Location`; the modem disabled, unplugged
/// and back; ModemManager stopping, starting late and restarting; the compass and the cells together. What an AT
/// modem cannot do here stays with the stand-in (see `ModemGNSSEndToEndTests` and `CellEndToEndTests`).
@Suite("The real ModemManager, end to end", .serialized, .sharingARealModemManager)
@BusActor
struct RealModemManagerTests {
    typealias Rig = RealModemManagerSuite.Rig
    let client = GeoClueTestClient.clientInterface

    /// Waits until the app's latest fix is within 1e-5 degrees of the position given.
    func waitForFix(_ app: GeoClueTestClient, latitude: Double, longitude: Double, _ what: String) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        var latest: [String: DBusValue] = [:]
        while !(abs((latest["Latitude"]?.double ?? .nan) - latitude) < 1e-5
            && abs((latest["Longitude"]?.double ?? .nan) - longitude) < 1e-5)
        {
            guard ContinuousClock.now < deadline else {
                throw TestEnvironmentError("no fix \(what); the last was \(latest)")
            }
            try await Task.sleep(for: .milliseconds(100))
            latest = try await app.latestLocation() ?? [:]
        }
    }

    @Test func theServingCellThroughLTEUMTSAndGSMReachesTheServerAndTheAnswerIsServed() async throws {
        let rig = try await Rig.make(config: "[3g]\nenable=true\n")
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

        // A handover within the operator's LTE network.
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
        try await app.waitFor("the new cell's answer", timeout: .seconds(20)) { app.locationUpdates.count > 1 }
        let moved = try #require(try await app.latestLocation())
        #expect(moved["Latitude"]?.double == 48.2 && moved["Accuracy"]?.double == 1500, "\(moved)")

        // Another operator's UMTS network (a LAC instead of a TAC, after a second of searching), then its GSM
        // network, then a GSM handover.
        func cell(_ radio: String, _ areaCode: UInt32, _ cellID: UInt32) -> RealModemManager.Cell {
            .init(radio: radio, mobileCountryCode: "262", mobileNetworkCode: "02", areaCode: areaCode, cellID: cellID)
        }
        let cells = [
            (cell("umts", 0x2B3C, 0x123_4567), "wcdma"), (cell("gsm", 0x2B3D, 0x4E21), "gsm"),
            (cell("gsm", 0x2B3D, 0x4E22), "gsm"),
        ]
        for (cell, radio) in cells {
            try await onOwnThread { try mm.setCell(cell) }
            let tower = try await onOwnThread { try rig.tower(cell.cellID, radio: radio) }
            #expect(
                tower == [
                    "radioType": radio, "mobileCountryCode": "262", "mobileNetworkCode": "2",
                    "locationAreaCode": "\(cell.areaCode)", "cellId": "\(cell.cellID)",
                ], "\(tower)")
        }
    }

    @Test func anExactClientGetsTheCellsAnswerAsIsAndAKnownCellIsNotAskedAgain() async throws {
        let rig = try await Rig.make(config: "[3g]\nenable=true\n")
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("cell", "the modem seen", timeout: .seconds(20)) { $0.available }
        let client = try await app.startedClient(level: 8)
        try await app.waitFor("a cell fix", timeout: .seconds(20)) { !app.locationUpdates.isEmpty }
        let harness = rig.harness
        let status = try await onOwnThread { try runCLI(harness, ["status"]) }.output
        #expect(status.contains(": lte 262-1 TAC 3C4D CI 1A2B3C4\n"), "\(status)")
        _ = try await app.call(client, GeoClueTestClient.clientInterface, "Stop")
        try await app.waitForProviderRow("cell", "the provider stopped") { !$0.running }
        let updates = app.locationUpdates.count
        _ = try await app.call(client, GeoClueTestClient.clientInterface, "Start")
        try await app.waitFor("the known cell's fix again", timeout: .seconds(20)) {
            app.locationUpdates.count > updates
        }
        #expect(try await onOwnThread { try rig.queriedTowers() }.count == 1, "the known cell was asked again")
    }

    /// Once no client runs, the daemon turns the signalling it turned on back off: a cell changed meanwhile is the
    /// one served at the next start, never the answer of the cell the phone has left.
    @Test func aCellLeftWhileNoClientRanIsNotServedAtTheNextStart() async throws {
        let rig = try await Rig.make(config: "[3g]\nenable=true\n")
        let mm = rig.modemManager
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("cell", "the modem seen", timeout: .seconds(20)) { $0.available }
        let client = try await app.startedClient(level: 8)
        try await app.waitFor("the first cell's fix", timeout: .seconds(20)) { !app.locationUpdates.isEmpty }
        _ = try await app.call(client, GeoClueTestClient.clientInterface, "Stop")
        try await onOwnThread {
            try Wait.until("signalling off again", timeout: 20) { try !mm.locationSetup().signals }
            try mm.setCell(
                .init(
                    radio: "lte", mobileCountryCode: "262", mobileNetworkCode: "01", areaCode: 0x3C4E,
                    cellID: 0x1A2_B3C5))
            try rig.server.setLocation(latitude: 48.2, longitude: 11.6, accuracy: 1500)
        }
        let updates = app.locationUpdates.count
        _ = try await app.call(client, GeoClueTestClient.clientInterface, "Start")
        try await app.waitFor("a fix after the new start", timeout: .seconds(20)) {
            app.locationUpdates.count > updates
        }
        let fix = try #require(try await app.latestLocation())
        #expect(fix["Latitude"]?.double == 48.2 && fix["Accuracy"]?.double == 1500, "the cell left was served: \(fix)")
        let towers = try await onOwnThread { try rig.queriedTowers() }
        #expect(towers.map { $0["cellId"] } == ["\(0x1A2_B3C4)", "\(0x1A2_B3C5)"], "\(towers)")
    }

    @Test func anExactClientGetsTheModemsNMEAFixAndTheReceiverIsLeftAsFound() async throws {
        let rig = try await Rig.make(config: "[modem-gps]\nenable=true\n")
        let mm = rig.modemManager
        let initial = rig.shared.initialSources
        try await onOwnThread {
            try mm.move(latitude: 52.5163, longitude: 13.3777)
            try rig.harness.startDaemon()
        }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "the modem seen", timeout: .seconds(20)) {
            $0.available && !$0.running
        }
        #expect(try await onOwnThread { try mm.receiver().on } == false)

        let path = try await exactClient(app)
        try await onOwnThread {
            try rig.waitForSetup(initial | ModemLocationSource.gpsNMEA, signals: true, "gps-nmea set up, signalled")
            try rig.waitForReceiver(true)
            // The receiver is paced by the clients' TimeThreshold (0: every fix).
            try Wait.until("GpsRefreshRate 0", timeout: 20) { try mm.gpsRefreshRate() == 0 }
        }
        try await waitForFix(app, latitude: 52.5163, longitude: 13.3777, "from the modem's receiver")
        let fix = try #require(try await app.latestLocation())
        #expect(fix["Description"] == .string("Modem GNSS"), "\(fix)")

        // The receiver moves and speaks with `$GP` talkers.
        try await onOwnThread {
            try mm.setNMEA(true, talker: "GP")
            try mm.move(latitude: 52.5200, longitude: 13.4050)
        }
        try await waitForFix(app, latitude: 52.52, longitude: 13.405, "of the moved receiver")

        // The last exact client gone, the receiver is off and signalling as the daemon found it.
        _ = try await app.call(path, client, "Stop")
        try await onOwnThread {
            try rig.waitForSetup(initial, signals: false, "gps-nmea off, signals off again")
            try rig.waitForReceiver(false)
        }
    }

    @Test func signallingSomethingElseTurnedOnStaysOnAfterTheLastExactClient() async throws {
        let rig = try await Rig.make(config: "[modem-gps]\nenable=true\n")
        let mm = rig.modemManager
        let initial = rig.shared.initialSources
        try await onOwnThread {
            try mm.setUpLocation(sources: initial, signals: true)
            try rig.harness.startDaemon()
        }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "the modem seen", timeout: .seconds(20)) { $0.available }
        let path = try await exactClient(app)
        try await onOwnThread {
            try rig.waitForSetup(initial | ModemLocationSource.gpsNMEA, signals: true, "gps-nmea set up")
        }
        _ = try await app.call(path, client, "Stop")
        try await onOwnThread { try rig.waitForSetup(initial, signals: true, "gps-nmea off, signals still on") }
    }

    @Test func cityAndNeighbourhoodClientsNeverTurnTheReceiverOn() async throws {
        let rig = try await Rig.make(config: "[modem-gps]\nenable=true\n\n[3g]\nenable=true\n")
        let mm = rig.modemManager
        let startsBefore = try await onOwnThread { try mm.receiver().starts }
        try await onOwnThread { try rig.harness.startDaemon() }
        let city = try await GeoClueTestClient(bus: rig.bus)
        defer { city.close() }
        let neighbourhood = try await GeoClueTestClient(bus: rig.bus)
        defer { neighbourhood.close() }
        try await city.waitForProviderRow("modem-gnss", "the modem seen", timeout: .seconds(20)) { $0.available }
        _ = try await city.startedClient(level: 4)
        _ = try await neighbourhood.startedClient(level: 5)
        // Both are served the serving cell's answer, which needs the cell signalled.
        try await neighbourhood.waitFor("the cell's answer", timeout: .seconds(20)) {
            !neighbourhood.locationUpdates.isEmpty
        }
        try await onOwnThread {
            let sources = rig.shared.initialSources | ModemLocationSource.threeGPPCell
            try rig.waitForSetup(sources, signals: true, "the cell signalled")
        }
        let row = try await city.providerRow("modem-gnss")
        #expect(row.available && !row.running, "\(row)")
        #expect(try await onOwnThread { try mm.receiver() } == (false, startsBefore))

        // Only an exact client turns it on.
        let exact = try await GeoClueTestClient(bus: rig.bus)
        defer { exact.close() }
        _ = try await exactClient(exact)
        try await onOwnThread { try rig.waitForReceiver(true) }
    }

    @Test func theRefreshRateFollowsTheSmallestTimeThresholdOfTheExactClients() async throws {
        let rig = try await Rig.make(config: "[modem-gps]\nenable=true\n")
        let mm = rig.modemManager
        try await onOwnThread { try rig.harness.startDaemon() }
        let first = try await GeoClueTestClient(bus: rig.bus)
        defer { first.close() }
        let second = try await GeoClueTestClient(bus: rig.bus)
        try await first.waitForProviderRow("modem-gnss", "the modem seen", timeout: .seconds(20)) { $0.available }
        func waitForRate(_ rate: UInt32) async throws {
            try await onOwnThread {
                try Wait.until("GpsRefreshRate \(rate)", timeout: 20) { try mm.gpsRefreshRate() == rate }
            }
        }
        let running = try await exactClient(first, timeThreshold: 20)
        try await waitForRate(20)
        _ = try await exactClient(second, timeThreshold: 5)
        try await waitForRate(5)
        second.close()
        try await waitForRate(20)
        // A running client's new threshold counts at once.
        try await first.set(running, client, "TimeThreshold", .uint32(7))
        try await waitForRate(7)
    }

    @Test func setupRefusedByPolkitIsReportedNamingTheRule() async throws {
        let rig = try await Rig.make(config: "[modem-gps]\nenable=true\n")
        let mm = rig.modemManager
        try await onOwnThread {
            try mm.refuse(["org.freedesktop.ModemManager1.Device.Control"])
            try rig.harness.startDaemon()
        }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "the modem seen", timeout: .seconds(20)) { $0.available }
        _ = try await exactClient(app)
        try await app.waitFor("AvailabilityChanged modem-unauthorised", timeout: .seconds(20)) {
            app.availabilityChanges.contains { !$0.available && $0.reason == "modem-unauthorised" }
        }
        let log = rig.harness.daemonLog
        #expect(log.contains("io.github.whereabouts1-modemmanager.rules"), "\(log)")
        #expect(log.contains("Unauthorized"), "\(log)")
        #expect(try await onOwnThread { try mm.receiver().on } == false)
        #expect(rig.harness.daemon?.isRunning == true)
    }

    @Test func locationRefusedByPolkitCostsNothingAsTheDaemonReadsTheSignalledLocation() async throws {
        // ModemManager's `Location` action guards `GetLocation`, which GeoClue 2.6 (through libmm-glib) calls on
        // every change; the daemon reads the `Location` property as ModemManager signals it, and needs only
        // `Device.Control`, for `Setup` and `SetGpsRefreshRate`.
        let rig = try await Rig.make(config: "[modem-gps]\nenable=true\n")
        let mm = rig.modemManager
        try await onOwnThread {
            try mm.refuse(["org.freedesktop.ModemManager1.Location"])
            try mm.move(latitude: 50.9375, longitude: 6.9603)
            try rig.harness.startDaemon()
        }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "the modem seen", timeout: .seconds(20)) { $0.available }
        _ = try await exactClient(app)
        try await waitForFix(app, latitude: 50.9375, longitude: 6.9603, "with Location refused")
        let refused = try await onOwnThread {
            try BusStandIn.busctl(
                rig.bus,
                [
                    "call", RealModemManager.busName, mm.modemPath, RealModemManager.locationInterface,
                    "GetLocation",
                ])
        }
        #expect(refused.status != 0 && refused.output.contains("not authorized"), "\(refused.output)")
    }

    @Test func aModemDisabledUnpluggedAndBackIsReportedAndServedAgain() async throws {
        let rig = try await Rig.make(config: "[modem-gps]\nenable=true\n\n[3g]\nenable=true\n")
        let mm = rig.modemManager
        try await onOwnThread {
            try mm.move(latitude: 53.5511, longitude: 9.9937)
            try rig.harness.startDaemon()
        }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "the modem seen", timeout: .seconds(20)) { $0.available }
        _ = try await exactClient(app)
        try await waitForFix(app, latitude: 53.5511, longitude: 9.9937, "from the modem")

        // Disabled, as NetworkManager does when the user turns mobile broadband off.
        let disable = try await onOwnThread {
            try BusStandIn.busctl(
                rig.bus,
                [
                    "call", "--timeout=30", RealModemManager.busName, mm.modemPath,
                    "org.freedesktop.ModemManager1.Modem", "Enable", "b", "false",
                ])
        }
        #expect(disable.status == 0, "\(disable.output)")
        try await app.waitFor("AvailabilityChanged modem-disabled", timeout: .seconds(20)) {
            app.availabilityChanges.contains { !$0.available && $0.reason == "modem-disabled" }
        }
        try await onOwnThread { try mm.enable() }
        try await app.waitForProviderRow("modem-gnss", "the modem enabled again", timeout: .seconds(20)) {
            $0.available && $0.running
        }
        try await onOwnThread { try rig.waitForReceiver(true) }

        // Unplugged: no modem, no cells.
        try await onOwnThread { try mm.remove() }
        try await app.waitForProviderRow("modem-gnss", "no modem", timeout: .seconds(20)) {
            $0.details["reason"] == .string("no-modem")
        }
        try await app.waitForProviderRow("cell", "no cell provider", timeout: .seconds(20)) { !$0.available }

        // Plugged in again: a new modem object, set up again, its fixes served.
        try await onOwnThread {
            try mm.add()
            try mm.move(latitude: 53.5600, longitude: 10.0000)
        }
        try await app.waitForProviderRow("modem-gnss", "the modem back", timeout: .seconds(20)) { $0.available }
        try await waitForFix(app, latitude: 53.56, longitude: 10, "from the modem plugged in again")
        #expect(rig.harness.daemon?.isRunning == true)
    }

    @Test func modemManagerStartingLateAndRestartingIsFollowed() async throws {
        let rig = try await Rig.make(config: "[modem-gps]\nenable=true\n")
        let mm = rig.modemManager
        mm.stopModemManager()
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "no modem") { $0.details["reason"] == .string("no-modem") }
        _ = try await exactClient(app)

        // ModemManager starts after the daemon.
        try await onOwnThread {
            try mm.move(latitude: 48.7758, longitude: 9.1829)
            try mm.start()
        }
        try await app.waitForProviderRow("modem-gnss", "the modem seen", timeout: .seconds(30)) {
            $0.available && $0.running
        }
        try await waitForFix(app, latitude: 48.7758, longitude: 9.1829, "through the late ModemManager")

        // ModemManager restarts, as on an upgrade.
        mm.stopModemManager()
        try await app.waitFor("AvailabilityChanged no-modem", timeout: .seconds(20)) {
            app.availabilityChanges.contains { !$0.available && $0.reason == "no-modem" }
        }
        try await onOwnThread {
            try mm.move(latitude: 48.78, longitude: 9.19)
            try mm.start()
        }
        try await waitForFix(app, latitude: 48.78, longitude: 9.19, "through the restarted ModemManager")
    }

    @Test func theCompassHeadsTheReceiversFixesAndNotTheCellsForTheServiceUser() async throws {
        // The daemon as the package runs it, as `whereabouts`: ModemManager's bus policy lets any user call its
        // polkit-guarded methods, and iio-sensor-proxy's compass only the users the project's policy names. A cell's
        // answer places an area, not the device, and gets no heading, as in GeoClue 2.6; the receiver's fixes do.
        let rig = try await Rig.make(
            config: "[3g]\nenable=true\n\n[modem-gps]\nenable=true\n\n[compass]\nenable=true\n\n"
                + "[authorisation]\npolkit=false\ngrants=@DIR@/state/grants\n")
        let mm = rig.modemManager
        let proxy = try await onOwnThread { try SensorProxyHarness(bus: rig.bus) }
        defer { proxy.stop() }
        try await onOwnThread {
            try mm.setNMEA(false)
            let state = rig.harness.file("state")
            try FileManager.default.createDirectory(at: state, withIntermediateDirectories: false)
            guard let user = getpwnam("whereabouts"), chown(state.path, user.pointee.pw_uid, user.pointee.pw_gid) == 0
            else { throw TestEnvironmentError("cannot hand \(state.path) to whereabouts") }
            try rig.harness.startDaemon(launcher: [
                try Executables.find("setpriv").path, "--reuid=whereabouts", "--regid=whereabouts", "--clear-groups",
            ])
        }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("cell", "the modem seen", timeout: .seconds(20)) { $0.available }
        try await app.waitForProviderRow("compass", "the compass seen", timeout: .seconds(20)) { $0.available }
        let client = try await exactClient(app)
        try await app.waitForProviderRow("compass", "the compass claimed", timeout: .seconds(20)) {
            $0.details["claimed"] == .boolean(true)
        }
        /// The client's Location as both interfaces show it, once it is `description`'s and `condition` holds.
        func location(
            _ description: String, where condition: ([String: DBusValue]) -> Bool = { _ in true }
        ) async throws -> [String: DBusValue] {
            let deadline = ContinuousClock.now + .seconds(30)
            while true {
                if let path = try await app.get(client, self.client, "Location").objectPath, path.description != "/" {
                    let values = try await app.getAll(path, GeoClueTestClient.locationInterface).merging(
                        try await app.getAll(path, "io.github.whereabouts1.Location")
                    ) { geoClue, _ in geoClue }
                    if values["Description"] == .string(description), condition(values) { return values }
                }
                guard ContinuousClock.now < deadline else {
                    throw TestEnvironmentError("no \(description) fix\n\(rig.harness.daemonLog)")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let cell = try await location("Cell towers")
        #expect(cell["Heading"] == .double(-1) && cell["MagneticHeading"]?.double?.isNaN == true, "\(cell)")

        try await onOwnThread { try mm.setNMEA(true) }
        // The compass's first reading may come after the receiver's first fix, which then gets it in place.
        let receiver = try await location("Modem GNSS") { $0["MagneticHeading"]?.double?.isNaN == false }
        let magnetic = try #require(receiver["MagneticHeading"]?.double)
        #expect((0..<360).contains(magnetic), "\(receiver)")
    }

    @Test func theLocationValueAndTheRegistrationSignalsAreWhatTheStandInGives() async throws {
        let rig = try await Rig.make(config: "")
        let mm = rig.modemManager
        let sources = rig.shared.initialSources | ModemLocationSource.threeGPPCell
        let value = try await onOwnThread {
            try mm.setSky(true)
            try mm.setUpLocation(sources: sources | ModemLocationSource.gpsNMEA, signals: true)
            try mm.setGpsRefreshRate(0)
            var sentences = ""
            try Wait.until("the sentences in Location", timeout: 20) {
                let location = try mm.modemProperty("Location", interface: RealModemManager.locationInterface)
                let words = BusctlWords.split(location)
                // `a{uv} N key s value ...`: the value after the key 4 (gps-nmea).
                guard let key = stride(from: 2, to: words.count - 2, by: 3).first(where: { words[$0] == "4" })
                else { return false }
                sentences = words[key + 2]
                return sentences.contains("GSV,3,3")
            }
            return sentences
        }
        let written = value.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        let types = written.map { String($0.prefix { $0 != "," }) }
        let expected = ["$GNGGA", "$GNGSA", "$GNRMC", "$GPGSV", "$GPGSV", "$GPGSV"]
        #expect(types.sorted() == expected, "\(value.debugDescription)")
        ModemManagerParity.checkNMEAValue(value, holds: Set(written))

        try await onOwnThread {
            try mm.setNMEA(false)
            try mm.setUpLocation(sources: sources, signals: true)
        }
        let recorder = try await GeoClueTestClient(bus: rig.bus)
        defer { recorder.close() }
        try await onOwnThread {
            try mm.setRegistered(false)
            try Wait.until("searching", timeout: 20) { try mm.modemProperty("State") == "i 7" }
            try mm.setRegistered(true)
        }
        let path = mm.modemPath
        try await recorder.waitFor("the modem registered again", timeout: .seconds(20)) {
            ModemManagerParity.propertyChanges(recorder.signals, modem: path).filter {
                $0.properties.contains("State")
            }.count == 2
        }
        ModemManagerParity.checkRegistrationSignals(ModemManagerParity.propertyChanges(recorder.signals, modem: path))
    }

    @Test func aReceiverWithItsSkyInViewGivesTheVerticalAccuracyOfItsGSA() async throws {
        let rig = try await Rig.make(config: "[modem-gps]\nenable=true\n")
        let mm = rig.modemManager
        try await onOwnThread {
            try mm.setSky(true)
            try rig.harness.startDaemon()
        }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "the modem seen", timeout: .seconds(20)) { $0.available }
        let client = try await exactClient(app)
        // GGA's HDOP of 0.9 and GSA's VDOP of 1.5 (the receiver's own UERE, as the daemon's accuracy model has it).
        let deadline = ContinuousClock.now + .seconds(30)
        var values: [String: DBusValue] = [:]
        while !(values["VerticalAccuracy"]?.double.map { $0.isFinite && $0 > 0 } ?? false) {
            guard ContinuousClock.now < deadline else {
                throw TestEnvironmentError("no vertical accuracy: \(values)\n\(rig.harness.daemonLog)")
            }
            try await Task.sleep(for: .milliseconds(100))
            if let path = try await app.get(client, self.client, "Location").objectPath, path.description != "/" {
                values = try await app.getAll(path, "io.github.whereabouts1.Location")
            }
        }
        #expect(values["Altitude"]?.double == 545.4, "\(values)")
    }

    @Test func theReceiversSkyReachesTheExactClientsOwnerWithItsFixType() async throws {
        let rig = try await Rig.make(config: "[modem-gps]\nenable=true\n")
        let mm = rig.modemManager
        try await onOwnThread {
            try mm.setSky(true, glonass: true)
            try rig.harness.startDaemon()
        }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "the modem seen", timeout: .seconds(20)) { $0.available }
        let path = try await exactClient(app)
        let ours = "io.github.whereabouts1.Client"
        func names(_ sky: [DBusValue]) -> [String] {
            sky.compactMap(\.fields).map {
                "\($0[0].string ?? "") \($0[1].uint32 ?? 0)\($0[5].bool == true ? " used" : "")"
            }
        }
        let expected = [
            "gps 2 used", "gps 5 used", "gps 12 used", "gps 15 used", "gps 24 used", "gps 29 used", "glonass 6",
            "glonass 7",
        ]
        _ = try await app.get(path, ours, "Satellites")
        // ModemManager hands the GSV on before the GSA, so the first sky may not yet know what the fix uses.
        try await app.waitFor("the whole sky signalled", timeout: .seconds(30)) {
            app.signals.contains {
                $0.member == "SatellitesChanged" && names($0.arguments().first?.elements ?? []) == expected
            }
        }
        #expect(names(try await app.get(path, ours, "Satellites").elements ?? []) == expected)
        let location = try #require(try await app.get(path, client, "Location").objectPath)
        let values = try await app.getAll(location, "io.github.whereabouts1.Location")
        #expect(values["FixType"] == .string("3d"), "\(values)")
        #expect(values["HDOP"] == .double(0.9) && values["VDOP"] == .double(1.5) && values["PDOP"] == .double(1.8))
    }
}
