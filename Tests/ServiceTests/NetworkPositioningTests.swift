import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

/// A private bus with the wpa_supplicant stand-in, a loopback Ichnaea server over HTTPS with a test CA, and the
/// daemon configured for Wi-Fi (and optionally IP) positioning against it. Made off the bus thread: every part
/// waits by polling.
final class NetworkPositioningRig: @unchecked Sendable {
    /// Three usable access points, and six that must never leave the machine: a hidden network, `_nomap` and
    /// `_optout` names, a phone's hotspot by its random address and name, another by its default name, and a train's
    /// network.
    static let home: [WPASupplicantMock.BSS] = [
        .init(bssid: [0x00, 0x11, 0x22, 0x33, 0x44, 0x01], ssid: "home", signal: -48, frequency: 2437, age: 1),
        .init(bssid: [0x00, 0x11, 0x22, 0x33, 0x44, 0x02], ssid: "neighbour", signal: -67, frequency: 5180),
        .init(bssid: [0x00, 0x11, 0x22, 0x33, 0x44, 0x03], ssid: "cafe", signal: -75),
        .init(bssid: [0x00, 0x11, 0x22, 0x33, 0x44, 0x04], ssid: "", signal: -50),
        .init(bssid: [0x00, 0x11, 0x22, 0x33, 0x44, 0x05], ssid: "secret_nomap", signal: -52),
        .init(bssid: [0x00, 0x11, 0x22, 0x33, 0x44, 0x06], ssid: "x_optout_y", signal: -54),
        .init(bssid: [0x02, 0x11, 0x22, 0x33, 0x44, 0x07], ssid: "Phone", signal: -40),
        .init(bssid: [0x00, 0x11, 0x22, 0x33, 0x44, 0x08], ssid: "Anna's iPhone", signal: -42),
        .init(bssid: [0x00, 0x11, 0x22, 0x33, 0x44, 0x09], ssid: "WIFIonICE", signal: -44),
    ]
    /// On a train: its networks, a passenger's hotspot, and one station network seen through the window.
    static let train: [WPASupplicantMock.BSS] = [
        .init(bssid: [0x00, 0x22, 0x33, 0x44, 0x55, 0x01], ssid: "WIFIonICE", signal: -40),
        .init(bssid: [0x00, 0x22, 0x33, 0x44, 0x55, 0x02], ssid: "WIFIonICE", signal: -45),
        .init(bssid: [0x06, 0x22, 0x33, 0x44, 0x55, 0x03], ssid: "Galaxy S23 8d1f", signal: -50),
        .init(bssid: [0x00, 0x11, 0x22, 0x33, 0x44, 0x01], ssid: "home", signal: -80),
    ]
    static let usableAddresses = ["00:11:22:33:44:01", "00:11:22:33:44:02", "00:11:22:33:44:03"]

    let authority: TestCertificateAuthority
    let server: IchnaeaServer
    let harness: DaemonHarness
    let wpa: WPASupplicantMock?
    /// What the server and the daemon are started through.
    let launcher: [String]

    var bus: PrivateBus { harness.bus }

    /// `extra` is appended to the configuration; `ip` enables IP positioning against the same server; `wifi`
    /// false leaves wpa_supplicant off the bus; with a `namespace`, the server and the daemon run in it.
    @concurrent
    static func make(
        extra: String = "", ip: Bool = false, wifi: Bool = true, submission nick: String? = nil,
        namespace: NetworkNamespace? = nil
    ) async throws -> NetworkPositioningRig {
        try NetworkPositioningRig(extra: extra, ip: ip, wifi: wifi, submission: nick, namespace: namespace)
    }

    /// `submission` turns contributing on, with that nickname.
    private init(extra: String, ip: Bool, wifi: Bool, submission: String?, namespace: NetworkNamespace?) throws {
        authority = try TestCertificateAuthority.make()
        launcher = namespace?.launcher ?? []
        server = try IchnaeaServer(
            certificates: authority, latitude: 52.5163, longitude: 13.3777, accuracy: 42, launcher: launcher)
        let bus = try PrivateBus(
            extraPolicy: WPASupplicantMock.busPolicy + NetworkManagerMock.busPolicy + ModemManagerMock.busPolicy)
        let config = """
            [network]
            ca-file=\(authority.certificateFile.path)

            [wifi]
            enable=true
            url=\(server.url())
            submit-data=\(submission != nil)
            submission-url=\(server.url("/v2/geosubmit"))
            submission-nick=\(submission ?? "")

            [ip]
            enable=\(ip)
            url=\(server.url())

            """ + extra
        harness = try DaemonHarness(config: config, bus: bus)
        wpa = wifi ? try WPASupplicantMock(bus: bus, interfaces: ["wlan0"]) : nil
        try wpa?.setScanResults("wlan0", Self.home)
    }

    @concurrent
    func launch() async throws { try harness.startDaemon(launcher: launcher) }

    /// An app on a connection of its own with a street-level client started and its first update in; the caller
    /// closes it.
    @BusActor
    func streetClient() async throws -> GeoClueTestClient {
        let app = try await GeoClueTestClient(bus: bus)
        do {
            _ = try await app.startedClient(level: 6)
            _ = try await app.waitForUpdates(1)
            return app
        } catch {
            app.close()
            throw error
        }
    }

    /// The daemon's row of `Providers` for `kind`: (available, running, details).
    @BusActor
    func provider(_ kind: String, _ app: GeoClueTestClient) async throws -> (
        available: Bool, running: Bool, details: [String: DBusValue]
    ) {
        let rows = try await app.get(GeoClueTestClient.managerPath, "io.github.whereabouts1.Manager", "Providers")
        for row in rows.elements ?? [] {
            guard let fields = row.fields, fields.count == 5, fields[0].string == kind else { continue }
            return (
                fields[2].bool ?? false, fields[3].bool ?? false,
                (fields[4].stringKeyedEntries ?? [:]).mapValues(\.unwrapped)
            )
        }
        throw TestEnvironmentError("no \(kind) provider in \(rows)")
    }

    /// The `wifi` row once its first lookup has ended (the one with a `last-outcome`), within 15 s.
    @BusActor
    func afterFirstLookup(_ app: GeoClueTestClient) async throws -> (
        available: Bool, running: Bool, details: [String: DBusValue]
    ) {
        let deadline = ContinuousClock.now + .seconds(15)
        while true {
            let row = try await provider("wifi", app)
            if row.details["last-outcome"] != nil || ContinuousClock.now >= deadline { return row }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func stop() {
        harness.stop()
        wpa?.stop()
        server.stop()
        authority.remove()
    }
}

/// Parses a recorded request body as JSON.
func jsonObject(_ request: IchnaeaServer.Request) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any], "\(request.bodyText)")
}

@Suite("Wi-Fi and IP positioning through an Ichnaea service, end to end", .serialized)
@BusActor
struct NetworkPositioningTests {
    static let ours = "io.github.whereabouts1.Location"

    @Test func aStreetClientGetsTheServersPositionFromOnlyTheUsableAccessPoints() async throws {
        let rig = try await NetworkPositioningRig.make()
        defer { rig.stop() }
        try await rig.launch()
        let daemon = try #require(rig.harness.daemon)
        #expect(!(try mapsLibcurl(daemon.pid)), "libcurl was loaded before any client needed the network")
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        // A street-level client (a Qt app preferring non-satellite methods) gets the Wi-Fi answer itself, as GeoClue
        // gives it: the level chose the providers, and nothing the user chose limits the app.
        _ = try await app.startedClient(level: 6)
        let update = try await app.waitForUpdates(1)[0]
        let location = try await app.getAll(update.new, GeoClueTestClient.locationInterface)
        #expect(location["Latitude"] == .double(52.5163) && location["Longitude"] == .double(13.3777))
        #expect(location["Accuracy"] == .double(42))
        #expect(location["Description"] == .string("WiFi"))
        #expect(try await app.get(update.new, Self.ours, "Provider") == .string("wifi"))

        let requests = try rig.server.requests
        try #require(requests.count == 1, "\(requests)")
        let request = requests[0]
        #expect(request.method == "POST" && request.path == IchnaeaServer.geolocatePath)
        #expect(request.header("Content-Type") == "application/json")
        #expect(request.header("User-Agent")?.hasPrefix("whereaboutsd/") == true, "\(request.headers)")
        let body = try jsonObject(request)
        #expect(body["considerIp"] as? Bool == false)
        let fallbacks = try #require(body["fallbacks"] as? [String: Bool])
        #expect(fallbacks["ipf"] == false)
        let sent = try #require(body["wifiAccessPoints"] as? [[String: Any]])
        #expect(sent.compactMap { $0["macAddress"] as? String } == NetworkPositioningRig.usableAddresses)
        #expect(sent.compactMap { $0["signalStrength"] as? Int } == [-48, -67, -75])
        // Nothing else about an access point leaves the machine: no names, channels or ages.
        #expect(sent.allSatisfy { Set($0.keys) == ["macAddress", "signalStrength"] }, "\(sent)")
        #expect(!request.bodyText.contains("home") && !request.bodyText.contains("Phone"))

        let row = try await rig.provider("wifi", app)
        #expect(row.available && row.running)
        #expect(row.details["requests"] == .uint32(1))
        #expect(row.details["last-outcome"] == .string("position"))
        // The one request above answered from the network; on a loaded machine the next scan of the same access
        // points may already have come, answered from the cache.
        let source = row.details["last-source"]
        #expect(source == .string("network") || source == .string("cache"), "\(row.details)")
        #expect(row.details["backend"] == .string("wpa_supplicant"))
        #expect(try mapsLibcurl(daemon.pid), "the lookup went through libcurl")
    }

    /// Where the user limited the app below its request, the stable grid holds: the user's agent capping at city
    /// turns the street client's Wi-Fi answer into the centre of a 15 km cell, and lifting the cap gives the answer
    /// back.
    @Test func aTrainsNetworksAreNeverSentNorMakeAFix() async throws {
        let rig = try await NetworkPositioningRig.make()
        defer { rig.stop() }
        try rig.wpa?.setScanResults("wlan0", NetworkPositioningRig.train)
        try await rig.launch()
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        let client = try await app.startedClient(level: 6)
        try await app.waitFor("AvailabilityChanged(false, moving-network)", timeout: .seconds(40)) {
            app.signals.contains {
                $0.member == "AvailabilityChanged" && $0.path == client && $0.arguments().first == .boolean(false)
                    && $0.arguments().dropFirst().first == .string("moving-network")
            }
        }
        let row = try await rig.provider("wifi", app)
        #expect(!row.available && row.details["reason"] == .string("moving-network"), "\(row)")
        #expect(row.details["moving-networks-left-out"] == .uint32(3), "\(row)")
        #expect(try rig.server.requests.isEmpty)
        #expect(app.locationUpdates.isEmpty)
        // Off the train: the next scan is looked up, with the usable access points alone.
        try rig.wpa?.setScanResults("wlan0", NetworkPositioningRig.home)
        _ = try await app.waitForUpdates(1, timeout: .seconds(40))
        let requests = try rig.server.requests
        try #require(requests.count == 1, "\(requests)")
        let sent = try #require(try jsonObject(requests[0])["wifiAccessPoints"] as? [[String: Any]])
        #expect(sent.compactMap { $0["macAddress"] as? String } == NetworkPositioningRig.usableAddresses)
        // Home's hotspots, by their names and random addresses, and a train's network passing by.
        #expect(try await rig.provider("wifi", app).details["moving-networks-left-out"] == .uint32(3))
    }

    @Test func aStreetClientTheUserCappedGetsTheGrid() async throws {
        let rig = try await NetworkPositioningRig.make()
        defer { rig.stop() }
        try await rig.launch()
        let app = try await rig.streetClient()
        defer { app.close() }
        let agent = try GeoClueTestAgent(bus: rig.bus, maxAccuracyLevel: 8)
        try await agent.register()
        agent.setMaxAccuracyLevel(4)
        let capped = try await app.waitForUpdates(2)[1]
        let coarse = try await app.getAll(capped.new, GeoClueTestClient.locationInterface)
        let accuracy = coarse["Accuracy"]?.double ?? 0
        #expect(accuracy >= 15_000 && coarse["Latitude"] != .double(52.5163), "\(coarse)")
        // The cell's centre: the same for every fix inside it, the answer within the widened accuracy.
        let latitude = coarse["Latitude"]?.double ?? .nan
        #expect(abs(latitude - 52.5163) * 111_320 <= accuracy, "\(coarse)")
        agent.setMaxAccuracyLevel(8)
        let lifted = try await app.waitForUpdates(3)[2]
        #expect(try await app.get(lifted.new, GeoClueTestClient.locationInterface, "Accuracy") == .double(42))
    }

    /// True when the process has libcurl mapped.
    private func mapsLibcurl(_ pid: pid_t) throws -> Bool {
        let file = try #require(FileHandle(forReadingAtPath: "/proc/\(pid)/maps"))
        defer { try? file.close() }
        return String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self).contains("/libcurl")
    }

    @Test func aCorruptCacheIsMovedAsideAndTheServerAskedAgain() async throws {
        let rig = try await NetworkPositioningRig.make()
        defer { rig.stop() }
        try write(Array("whereabouts-position-cache 1\nthis is not an entry\n".utf8), to: rig.harness.file("positions"))
        try await rig.launch()
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        _ = try await app.startedClient(level: 8)
        _ = try await app.waitForUpdates(1)
        #expect(try rig.server.requests.count == 1)
        let log = rig.harness.daemonLog
        #expect(
            log.contains("position cache: ") && log.contains("moved it to")
                && log.contains("starting with an empty cache"), "\(log)")
        let aside = try FileManager.default.contentsOfDirectory(atPath: rig.harness.directory.path)
            .filter { $0.hasPrefix("positions.corrupt-") }
        #expect(aside.count == 1, "\(aside)")
        // The answer is kept again, in a new file.
        try await eventually("the new cache on disk") {
            (try? String(contentsOf: rig.harness.file("positions"), encoding: .utf8))?.contains("52.5163") == true
        }
    }

    @Test func nothingIsScannedOrSentForClientsThatDoNotNeedWiFi() async throws {
        let rig = try await NetworkPositioningRig.make(
            extra: "\n[static-source]\nenable=true\npath=@DIR@/geolocation\n")
        defer { rig.stop() }
        try write(Array(staticFile.utf8), to: rig.harness.file("geolocation"))
        try await rig.launch()
        let observer = try await GeoClueTestClient(bus: rig.bus)
        defer { observer.close() }
        #expect(try await rig.provider("wifi", observer).running == false)
        // A city-level client is served by the static source; Wi-Fi (neighbourhood and above) is not started.
        let city = try await GeoClueTestClient(bus: rig.bus)
        defer { city.close() }
        _ = try await city.startedClient(level: 4)
        _ = try await city.waitForUpdates(1)
        #expect(try await rig.provider("wifi", observer).running == false)
        #expect(try rig.wpa!.scanCount("wlan0") == 0)
        #expect(try rig.server.requests.isEmpty)
        // A street-level client starts it: one scan, one lookup.
        let street = try await GeoClueTestClient(bus: rig.bus)
        defer { street.close() }
        let client = try await street.startedClient(level: 6)
        try await eventually("a lookup") { try rig.server.requests.count == 1 }
        #expect(try await rig.provider("wifi", observer).running)
        // Stopping it stops the scans: the stand-in's count stays where it was once the provider is idle.
        _ = try await street.call(client, GeoClueTestClient.clientInterface, "Stop")
        #expect(try await rig.provider("wifi", observer).running == false)
        let scans = try rig.wpa!.scanCount("wlan0")
        #expect(scans >= 1)
        try rig.wpa!.scan("wlan0")
        try await Task.sleep(for: .milliseconds(300))
        #expect(try rig.server.requests.count == 1, "a scan by someone else while stopped was looked up")
    }

    @Test func theCacheAnswersAfterARestartWithTheServerGone() async throws {
        let rig = try await NetworkPositioningRig.make()
        defer { rig.stop() }
        try await rig.launch()
        do {
            let app = try await GeoClueTestClient(bus: rig.bus)
            defer { app.close() }
            _ = try await app.startedClient(level: 6)
            _ = try await app.waitForUpdates(1)
        }
        try await eventually("the position cache on disk") {
            FileManager.default.fileExists(atPath: rig.harness.file("positions").path)
        }
        rig.harness.daemon?.stop()
        rig.server.stop()
        try await rig.launch()
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        _ = try await app.startedClient(level: 8)
        let update = try await app.waitForUpdates(1)[0]
        let location = try await app.getAll(update.new, GeoClueTestClient.locationInterface)
        #expect(location["Latitude"] == .double(52.5163) && location["Longitude"] == .double(13.3777))
        #expect(location["Description"] == .string("WiFi (cached)"))
        let row = try await rig.provider("wifi", app)
        #expect(row.details["requests"] == .uint32(0), "\(row.details)")
        #expect(row.details["last-source"] == .string("cache"))
        #expect(row.available)
    }

    @Test func aPlaceLearnedWithASatelliteFixIsLocatedWithTheServerGone() async throws {
        let socketDirectory = try TemporaryDirectory.make(prefix: "whereabouts-nmea")
        defer { try? FileManager.default.removeItem(at: socketDirectory) }
        let nmea = try NMEASocketServer(path: socketDirectory.appendingPathComponent("nmea.sock").path)
        let rig = try await NetworkPositioningRig.make(
            extra: "\n[network-nmea]\nenable=true\nnmea-socket=\(nmea.path)\n")
        defer { rig.stop() }
        rig.server.stop()
        try await rig.launch()
        let exact = try await GeoClueTestClient(bus: rig.bus)
        let client = try await exact.startedClient(level: 8)
        try await accept(nmea)
        // Satellite fixes at 48.0 N 11.0 E (HDOP 0.9: about 6 m), four a second, until a scan came with one.
        var second = 0
        while try await rig.provider("wifi", exact).details["learned-places"] != .uint32(1) {
            try #require(second < 120, "no place learned in 30 s of fixes")
            nmea.write(Array(nmeaTrack(count: 1, startSecond: second).utf8))
            second += 1
            try await Task.sleep(for: .milliseconds(250))
        }
        _ = try await exact.waitForUpdates(1)
        _ = try await exact.call(client, GeoClueTestClient.clientInterface, "Stop")
        exact.close()
        nmea.dropClient()

        // An exact client again, now with no satellite fixes: Wi-Fi alone, uncoarsened.
        let street = try await GeoClueTestClient(bus: rig.bus)
        defer { street.close() }
        _ = try await street.startedClient(level: 8)
        let update = try await street.waitForUpdates(1)[0]
        let location = try await street.getAll(update.new, GeoClueTestClient.locationInterface)
        let latitude = try #require(location["Latitude"]?.double)
        let longitude = try #require(location["Longitude"]?.double)
        #expect(abs(latitude - 48.0) < 0.001 && abs(longitude - 11.0) < 0.002, "\(location)")
        #expect(location["Description"] == .string("WiFi (a place learned on this machine)"))
        #expect(location["Accuracy"] == .double(100))
        #expect(try await rig.provider("wifi", street).details["last-source"] == .string("learned"))
        #expect(try rig.server.requests.isEmpty)
        // What was learned names the fixed access points alone: no hotspot, no train.
        let positions = rig.harness.file("positions")
        try await street.waitFor("the learned place saved", timeout: .seconds(30)) {
            (try? String(contentsOf: positions, encoding: .utf8))?.contains("00:11:22:33:44:01") == true
        }
        let saved = try String(contentsOf: positions, encoding: .utf8)
        for moving in ["02:11:22:33:44:07", "00:11:22:33:44:08", "00:11:22:33:44:09"] {
            #expect(!saved.contains(moving), "\(saved)")
        }
    }

    @concurrent
    private func accept(_ server: NMEASocketServer) async throws { try server.accept() }

    @Test func contributingSendsAPreciseFixWithTheAccessPointsAtMostOnceAMinute() async throws {
        let socketDirectory = try TemporaryDirectory.make(prefix: "whereabouts-nmea")
        defer { try? FileManager.default.removeItem(at: socketDirectory) }
        let nmea = try NMEASocketServer(path: socketDirectory.appendingPathComponent("nmea.sock").path)
        let rig = try await NetworkPositioningRig.make(
            extra: "\n[network-nmea]\nenable=true\nnmea-socket=\(nmea.path)\n", submission: "tester")
        defer { rig.stop() }
        try rig.server.setResponse(path: "/v2/geosubmit", .answer(status: 200, body: "{}"))
        try await rig.launch()
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        _ = try await app.startedClient(level: 8)
        try await accept(nmea)
        // Fixes four a second until a scan came with one and was submitted; a scan is also asked for every 5 s, so
        // that a loaded machine's late scans do not leave the fixes without one.
        var second = 0
        while try !rig.server.requests.contains(where: { $0.path == "/v2/geosubmit" }) {
            try #require(second < 240, "nothing submitted in 60 s of fixes")
            nmea.write(Array(nmeaTrack(count: 1, startSecond: second).utf8))
            if second % 20 == 19 { try rig.wpa!.scan("wlan0") }
            second += 1
            try await Task.sleep(for: .milliseconds(250))
        }
        // More fixes and another scan within the minute: still one submission.
        try rig.wpa!.scan("wlan0")
        for _ in 0..<8 {
            nmea.write(Array(nmeaTrack(count: 1, startSecond: second).utf8))
            second += 1
            try await Task.sleep(for: .milliseconds(250))
        }
        let submissions = try rig.server.requests.filter { $0.path == "/v2/geosubmit" }
        #expect(submissions.count == 1, "\(submissions.count) submissions within a minute")
        let submission = try #require(submissions.first)
        #expect(submission.header("X-Nickname") == "tester")
        let body = try jsonObject(submission)
        let item = try #require((body["items"] as? [[String: Any]])?.first)
        let position = try #require(item["position"] as? [String: Any])
        #expect(abs((position["latitude"] as? Double ?? 0) - 48.0) < 0.001)
        #expect((position["accuracy"] as? Double ?? 1000) <= 100)
        let sent = try #require(item["wifiAccessPoints"] as? [[String: Any]])
        #expect(sent.compactMap { $0["macAddress"] as? String } == NetworkPositioningRig.usableAddresses)
        #expect(sent.compactMap { $0["ssid"] as? String } == ["home", "neighbour", "cafe"])
        #expect(try await rig.provider("wifi", app).details["submissions"] == .uint32(1))
    }

    /// Each bad answer or failure leaves the daemon serving (a fresh `GetClient` answers), gives no fix and a
    /// clear state in `Providers` and line in the log.
    @Test(arguments: [
        (
            "400",
            IchnaeaServer.Response.answer(
                status: 400,
                body:
                    #"{"error":{"errors":[{"reason":"keyInvalid"}],"code":400,"message":"Missing or invalid API key."}}"#
            ), "refused", "keyInvalid"
        ),
        (
            "403",
            .answer(status: 403, body: #"{"error":{"code":403,"message":"You have exceeded your daily limit."}}"#),
            "refused", "daily limit"
        ),
        ("500", .answer(status: 500, body: "Internal Server Error"), "server-error", "HTTP 500"),
        (
            "malformed", .answer(status: 200, body: #"{"location":{"lat":"north","lng":13.4},"accuracy":10}"#),
            "malformed", "lat"
        ),
        ("not JSON", .answer(status: 200, body: "<html>hello</html>"), "malformed", ""),
        (
            "fallback",
            .answer(status: 200, body: #"{"location":{"lat":52.5,"lng":13.4},"accuracy":25000,"fallback":"ipf"}"#),
            "malformed", "fallback"
        ),
        ("10 MB", .huge(bytes: 10 << 20, declaresLength: true), "failed", "larger than"),
        ("dropped", .close, "failed", ""),
    ])
    func aBadAnswerGivesNoFixAndALogLine(name: String, response: IchnaeaServer.Response, outcome: String, text: String)
        async throws
    {
        let rig = try await NetworkPositioningRig.make()
        defer { rig.stop() }
        try rig.server.setResponse(path: IchnaeaServer.geolocatePath, response)
        try await rig.launch()
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        _ = try await app.startedClient(level: 6)
        let row = try await rig.afterFirstLookup(app)
        #expect(row.details["last-outcome"] == .string(outcome), "\(name): \(row.details)")
        if !text.isEmpty {
            #expect(row.details["last-message"]?.string?.contains(text) == true, "\(name): \(row.details)")
        }
        #expect(row.available == false, "\(name): \(row.details)")
        #expect(row.details["reason"]?.string?.hasPrefix("service-") == true, "\(name): \(row.details)")
        #expect(app.locationUpdates.isEmpty, "\(name) gave a fix")
        #expect(rig.harness.daemonLog.contains("Wi-Fi: \(rig.server.url()): "), "\(name): \(rig.harness.daemonLog)")
        let other = try await GeoClueTestClient(bus: rig.bus)
        defer { other.close() }
        _ = try await other.getClient()
        #expect(rig.harness.daemon?.isRunning == true)
    }

    @Test func notFoundIsNoFixAndNoError() async throws {
        let rig = try await NetworkPositioningRig.make()
        defer { rig.stop() }
        try rig.server.setResponse(
            path: IchnaeaServer.geolocatePath, .answer(status: 404, body: IchnaeaServer.notFoundBody))
        try await rig.launch()
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        _ = try await app.startedClient(level: 6)
        let row = try await rig.afterFirstLookup(app)
        #expect(try rig.server.requests.count == 1)
        #expect(row.details["last-outcome"] == .string("not-found"))
        #expect(row.available, "a place the service does not know is no failure of the service")
        #expect(app.locationUpdates.isEmpty)
    }

    @Test func aHungServerNeverHoldsTheBus() async throws {
        let rig = try await NetworkPositioningRig.make()
        defer { rig.stop() }
        try rig.server.setResponse(path: IchnaeaServer.geolocatePath, .hang)
        try await rig.launch()
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        _ = try await app.startedClient(level: 6)
        try await eventually("the lookup to reach the server") { try rig.server.requests.count == 1 }
        let other = try await GeoClueTestClient(bus: rig.bus)
        defer { other.close() }
        let started = ContinuousClock.now
        _ = try await other.getClient()
        let row = try await rig.provider("wifi", other)
        let elapsed = ContinuousClock.now - started
        print("GetClient and a Providers read while a lookup hangs: \(elapsed)")
        #expect(row.details["requests"] == .uint32(1))
        #expect(app.locationUpdates.isEmpty)
    }

    @Test func aRefusedConnectionDropsAvailabilityWithAReasonAndItComesBack() async throws {
        let rig = try await NetworkPositioningRig.make()
        defer { rig.stop() }
        try rig.server.setResponse(path: IchnaeaServer.geolocatePath, .close)
        try await rig.launch()
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        let client = try await app.startedClient(level: 6)
        try await app.waitFor("AvailabilityChanged(false, service-unreachable)", timeout: .seconds(15)) {
            app.signals.contains {
                $0.member == "AvailabilityChanged" && $0.path == client
                    && $0.arguments().first == .boolean(false)
                    && $0.arguments().dropFirst().first == .string("service-unreachable")
            }
        }
        #expect(try await app.availableLevel() == 0)
        // The service comes back: the next try (10 s later, with the next scan) answers, and clients are told.
        try rig.server.removeResponse(path: IchnaeaServer.geolocatePath)
        try await app.waitFor("AvailabilityChanged(true)", timeout: .seconds(40)) {
            app.signals.contains {
                $0.member == "AvailabilityChanged" && $0.path == client && $0.arguments().first == .boolean(true)
            }
        }
        _ = try await app.waitForUpdates(1, timeout: .seconds(10))
        #expect(try await app.availableLevel() == 6)
        #expect(rig.harness.daemonLog.contains("answers again"))
    }

    @Test func aServerNothingListensOnIsUnreachable() async throws {
        let rig = try await NetworkPositioningRig.make()
        defer { rig.stop() }
        rig.server.stop()
        try await rig.launch()
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        _ = try await app.startedClient(level: 6)
        let row = try await rig.afterFirstLookup(app)
        #expect(row.details["last-outcome"] == .string("failed"))
        #expect(row.details["last-message"]?.string?.hasPrefix("cannot connect") == true, "\(row.details)")
        #expect(row.details["reason"] == .string("service-unreachable") && !row.available)
        #expect(app.locationUpdates.isEmpty)
    }

    @Test func ipPositioningStartedAgainWithinABackoffRetriesWhenItEnds() async throws {
        let rig = try await NetworkPositioningRig.make(ip: true, wifi: false)
        defer { rig.stop() }
        try rig.server.setResponse(path: IchnaeaServer.geolocatePath, .close)
        try await rig.launch()
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        let client = try await app.startedClient(level: 4)
        try await eventually("the first lookup to fail") { try rig.server.requests.count == 1 }
        var row = try await rig.provider("ip", app)
        while row.details["last-outcome"] == nil { row = try await rig.provider("ip", app) }
        #expect(row.details["last-outcome"] == .string("failed"))
        // Stopped and started again within the 10 s backoff, with the service back: the try is made when the
        // backoff ends, not dropped.
        _ = try await app.call(client, GeoClueTestClient.clientInterface, "Stop")
        try rig.server.removeResponse(path: IchnaeaServer.geolocatePath)
        _ = try await app.call(client, GeoClueTestClient.clientInterface, "Start")
        _ = try await app.waitForUpdates(1, timeout: .seconds(30))
        #expect(try rig.server.requests.count == 2)
        #expect(try await rig.provider("ip", app).available)
    }

    /// A laptop carried to another network (here its default route replaced, in a network namespace of the test's
    /// own): the IP position, which is the network's, is asked again at once, not at its half-hourly refresh.
    /// IP positioning alone in a network namespace of the test's own whose default route goes via 192.0.2.1: the
    /// daemon launched, a city client started with its first update in, and the routes read; `body` gets the
    /// namespace, the rig, the app and its client. The namespace is made and changed on threads of their own: this
    /// suite runs on the bus thread, which must keep serving.
    func withCityClientInNamespace(
        _ body: (NetworkNamespace, NetworkPositioningRig, GeoClueTestClient, ObjectPath) async throws -> Void
    ) async throws {
        let namespace = try await onOwnThread { try NetworkNamespace() }
        defer { namespace.stop() }
        _ = try await onOwnThread { try namespace.ip(["route", "add", "default", "via", "192.0.2.1"]) }
        let rig = try await NetworkPositioningRig.make(ip: true, wifi: false, namespace: namespace)
        defer { rig.stop() }
        try await rig.launch()
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        let client = try await app.startedClient(level: 4)
        _ = try await app.waitForUpdates(1)
        try await eventually("the daemon to have read the routes") {
            rig.harness.daemonLog.contains("network: online, default routes: IPv4 via 192.0.2.1")
        }
        try await body(namespace, rig, app, client)
    }

    @Test func joiningAnotherNetworkAsksTheIPPositionAgainAtOnce() async throws {
        try await withCityClientInNamespace { namespace, rig, app, _ in
            let first = app.locationUpdates[0]
            #expect(
                abs(try await app.get(first.new, GeoClueTestClient.locationInterface, "Latitude").double! - 52.5) < 0.5)
            try rig.server.setLocation(latitude: 48.1, longitude: 11.6, accuracy: 25000)
            _ = try await onOwnThread { try namespace.ip(["route", "replace", "default", "via", "198.51.100.1"]) }
            let second = try await app.waitForUpdates(2, timeout: .seconds(20))[1]
            #expect(
                abs(try await app.get(second.new, GeoClueTestClient.locationInterface, "Latitude").double! - 48.1) < 0.5
            )
            #expect(try rig.server.requests.count == 2)
            #expect(rig.harness.daemonLog.contains("network changed: online, default routes: IPv4 via 198.51.100.1"))
        }
    }

    @Test func noIPGuessWhileTrafficGoesThroughATunnel() async throws {
        try await withCityClientInNamespace { namespace, rig, app, client in
            // A VPN as OpenVPN routes one: a tun device and two half routes, the default route left as it was.
            _ = try await onOwnThread {
                try namespace.ip(["tuntap", "add", "dev", "tun0", "mode", "tun"])
                try namespace.ip(["address", "add", "10.9.0.2/24", "dev", "tun0"])
                try namespace.ip(["link", "set", "tun0", "up"])
                try namespace.ip(["route", "add", "0.0.0.0/1", "dev", "tun0"])
                try namespace.ip(["route", "add", "128.0.0.0/1", "dev", "tun0"])
            }
            do {
                try await app.waitFor("AvailabilityChanged(false)", timeout: .seconds(20)) {
                    app.signals.contains {
                        $0.member == "AvailabilityChanged" && $0.path == client
                            && $0.arguments().first == .boolean(false)
                    }
                }
            } catch {
                throw TestEnvironmentError("\(error)\n\(rig.harness.daemonLog)")
            }
            #expect(rig.harness.daemonLog.contains("goes through a tunnel"), "\(rig.harness.daemonLog)")
            #expect(try await rig.provider("ip", app).details["reason"] == .string("vpn"))
            #expect(try rig.server.requests.count == 1)
            // The VPN goes: asked again at once, and the new network's answer served.
            try rig.server.setLocation(latitude: 48.1, longitude: 11.6, accuracy: 25000)
            _ = try await onOwnThread { try namespace.ip(["link", "delete", "tun0"]) }
            let second = try await app.waitForUpdates(2, timeout: .seconds(20))[1]
            #expect(
                abs(try await app.get(second.new, GeoClueTestClient.locationInterface, "Latitude").double! - 48.1) < 0.5
            )
            #expect(try rig.server.requests.count == 2)
            #expect(rig.harness.daemonLog.contains("no longer goes through a VPN; asking again"))
        }
    }

    @Test func ipPositioningServesCityClientsLabelledAsSuch() async throws {
        let rig = try await NetworkPositioningRig.make(ip: true, wifi: false)
        defer { rig.stop() }
        try rig.server.setLocation(latitude: 48.1, longitude: 11.6, accuracy: 25000)
        try await rig.launch()
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        _ = try await app.startedClient(level: 4)
        let update = try await app.waitForUpdates(1)[0]
        let location = try await app.getAll(update.new, GeoClueTestClient.locationInterface)
        #expect(location["Description"] == .string("GeoIP"))
        // Served at city level as the server answered it: no grid makes it worse than what is known.
        #expect(location["Latitude"] == .double(48.1) && location["Longitude"] == .double(11.6))
        #expect(location["Accuracy"] == .double(25000))
        #expect(try await app.get(update.new, Self.ours, "Provider") == .string("ip"))
        let requests = try rig.server.requests
        #expect(requests.count == 1 && requests.first?.bodyText == "{}", "\(requests)")
        // Without wpa_supplicant or NetworkManager, Wi-Fi says why it cannot deliver.
        let wifi = try await rig.provider("wifi", app)
        #expect(
            !wifi.available && wifi.details["reason"] == .string("no-wifi")
                && wifi.details["backend"] == .string("none"))
    }

    @Test func networkManagerServesWhereWpaSupplicantIsAbsent() async throws {
        let rig = try await NetworkPositioningRig.make(wifi: false)
        defer { rig.stop() }
        let networkManager = try await startNetworkManager(on: rig.bus)
        defer { networkManager.stop() }
        try await rig.launch()
        let device = try networkManager.addWiFiDevice("wlan0", interface: "wlan0")
        // 80 % and 45 %: -52 and -73 dBm by the inverse of NetworkManager's own mapping.
        try networkManager.addAccessPoint(
            device: device, name: "ap1", ssid: "home", hwAddress: "00:11:22:33:44:01", strength: 80)
        try networkManager.addAccessPoint(
            device: device, name: "ap2", ssid: "cafe", hwAddress: "00:11:22:33:44:02", strength: 45)
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        _ = try await app.startedClient(level: 8)
        let update = try await app.waitForUpdates(1, timeout: .seconds(20))[0]
        #expect(try await app.get(update.new, GeoClueTestClient.locationInterface, "Latitude") == .double(52.5163))
        #expect(try await rig.provider("wifi", app).details["backend"] == .string("NetworkManager"))
        let body = try jsonObject(try #require(try rig.server.requests.first))
        let sent = try #require(body["wifiAccessPoints"] as? [[String: Any]])
        #expect(sent.compactMap { $0["signalStrength"] as? Int } == [-52, -73], "\(sent)")
    }

    @concurrent
    private func startNetworkManager(on bus: PrivateBus) async throws -> NetworkManagerMock {
        try NetworkManagerMock(bus: bus)
    }

    @Test func whereaboutsStatusShowsTheLastLookup() async throws {
        let rig = try await NetworkPositioningRig.make()
        defer { rig.stop() }
        try await rig.launch()
        let app = try await rig.streetClient()
        defer { app.close() }
        let cli = try ProjectPaths.product("whereabouts")
        let output = try await runCLI(cli, ["status"], environment: rig.bus.environment)
        #expect(output.contains("provider wifi: available, running"), "\(output)")
        #expect(output.contains("  Wi-Fi scans: wpa_supplicant"), "\(output)")
        #expect(output.contains("  sent: 1 lookup"), "\(output)")
        #expect(output.contains(" position from network"), "\(output)")
        // A laptop's street-level request: served by Wi-Fi, the answer as the server gave it.
        let located = try await runCLI(
            cli, ["locate", "--accuracy", "street", "--json"], environment: rig.bus.environment)
        #expect(located.contains("\"horizontalAccuracy\":42"), "\(located)")
        #expect(located.contains("\"latitude\":52.5163"), "\(located)")
    }

    @concurrent
    private func runCLI(_ executable: URL, _ arguments: [String], environment: [String: String]) async throws -> String
    {
        let log = try TemporaryDirectory.make(prefix: "whereabouts-cli").appendingPathComponent("out")
        let process = try ChildProcess(executable, arguments, environment: environment, logFile: log)
        _ = try process.wait(timeout: 20)
        return process.log
    }
}
