import DBus
import Foundation
import Glibc
import Loop
import TestSupport
import Testing

/// The modem receiver's assistance end to end: predicted orbits (XTRA) downloaded from a loopback HTTPS server and
/// injected through the ModemManager stand-in before `Setup`, and the SUPL server. These run on the stand-in, not on
/// the real ModemManager: only QMI and MBIM modems implement `InjectAssistanceData` (ModemManager answers
/// `Unsupported` for the emulated AT modem), and the stand-in records the bytes injected and the order of the calls.
@Suite("Assisted GNSS through ModemManager, end to end", .serialized)
@BusActor
struct AssistedGNSSEndToEndTests {
    nonisolated static let orbitsPath = "/xtra3grc.bin"
    nonisolated static let orbits = "XTRA predicted orbits for the tests, 0123456789"

    /// A bus with the ModemManager and NetworkManager stand-ins, an HTTPS server serving the orbits, and the
    /// daemon on the bus (not yet started).
    final class Rig: @unchecked Sendable {
        let bus: PrivateBus
        let authority: TestCertificateAuthority
        let server: IchnaeaServer
        let modemManager: ModemManagerMock
        let networkManager: NetworkManagerMock
        let harness: DaemonHarness

        /// `modemGPS` is added to `[modem-gps]` (after `enable=true`), `extra` to the end of the configuration.
        init(modemGPS: String = "", extra: String = "") throws {
            authority = try TestCertificateAuthority.make()
            server = try IchnaeaServer(certificates: authority)
            try server.setResponse(
                path: AssistedGNSSEndToEndTests.orbitsPath,
                .answer(
                    status: 200, body: AssistedGNSSEndToEndTests.orbits, headers: ["Cache-Control": "max-age=86400"]))
            bus = try PrivateBus(extraPolicy: ModemManagerMock.busPolicy + NetworkManagerMock.busPolicy)
            do {
                modemManager = try ModemManagerMock(bus: bus)
                networkManager = try NetworkManagerMock(bus: bus)
                let config = """
                    [modem-gps]
                    enable=true
                    \(modemGPS)

                    [network]
                    ca-file=\(authority.certificateFile.path)

                    """ + extra
                harness = try DaemonHarness(config: config, bus: bus)
            } catch {
                bus.stop()
                throw error
            }
        }

        /// The URL of `path` on the server.
        var orbitsURL: String { server.url(AssistedGNSSEndToEndTests.orbitsPath) }

        /// The requests the server received for `path`.
        func requests(_ path: String = AssistedGNSSEndToEndTests.orbitsPath) throws -> [IchnaeaServer.Request] {
            try server.requests.filter { $0.path == path }
        }

        /// A registered modem with a GPS that takes XTRA from `servers` (the orbits' URL by default).
        func addModem(servers: [String]? = nil, capabilities: ModemManagerMock.LocationSources = [.gpsNMEA]) throws
            -> String
        {
            try modemManager.addModem(
                capabilities: capabilities, state: .registered, assistanceData: ModemManagerMock.xtra,
                assistanceServers: servers ?? [orbitsURL])
        }

        /// Waits until the modem at `modem` was set up with its receiver `count` times in all.
        func waitForReceiverSetups(_ modem: String, count: Int = 1) throws {
            try Wait.until("Setup with gps-nmea", timeout: 30) {
                try self.modemManager.setupCalls(modem).filter { $0.sources.contains(.gpsNMEA) }.count >= count
            }
        }

        deinit {
            harness.stop()
            modemManager.stop()
            networkManager.stop()
            server.stop()
            authority.remove()
        }
    }

    /// An app with an exact client started; the caller closes it.
    func exactClient(_ rig: Rig) async throws -> GeoClueTestClient {
        let app = try await GeoClueTestClient(bus: rig.bus)
        do {
            try await app.waitForProviderRow("modem-gnss", "the modem seen") { $0.available }
            _ = try await app.startedClient(level: 8)
        } catch {
            app.close()
            throw error
        }
        return app
    }

    /// Starts the daemon, runs an exact client until the modem's receiver is set up, and closes it.
    func runExactClient(_ rig: Rig, on modem: String, setups: Int = 1) async throws {
        let app = try await exactClient(rig)
        defer { app.close() }
        try await onOwnThread { try rig.waitForReceiverSetups(modem, count: setups) }
    }

    @Test func theOrbitsAreInjectedBeforeSetupOncePerModemAndFileAndAgainForAModemThatReturns() async throws {
        let rig = try Rig()
        let mm = rig.modemManager
        let modem = try await onOwnThread { try rig.addModem() }
        try await onOwnThread { try rig.harness.startDaemon() }
        try await runExactClient(rig, on: modem)
        let order = try await onOwnThread { try mm.callOrder(modem) }
        let injected = try #require(order.firstIndex(of: "InjectAssistanceData"), "\(order)")
        let setUp = try #require(order.firstIndex(of: "Setup"), "\(order)")
        #expect(injected < setUp, "\(order)")
        let injections = try await onOwnThread { try mm.injectedAssistanceData(modem) }
        #expect(injections.map(\.data) == [Array(Self.orbits.utf8)])
        #expect(injections.map(\.error) == [nil])

        // A second client later: the same file is not injected again, nor downloaded.
        try await runExactClient(rig, on: modem, setups: 2)
        #expect(try await onOwnThread { try mm.injectedAssistanceData(modem) }.count == 1)
        #expect(try await onOwnThread { try rig.requests() }.count == 1)

        // The modem leaves and comes back: it gets the kept file again, with no download.
        try await onOwnThread { try mm.removeModem(modem) }
        let back = try await onOwnThread { try rig.addModem() }
        try await runExactClient(rig, on: back)
        #expect(try await onOwnThread { try mm.injectedAssistanceData(back) }.map(\.data) == [Array(Self.orbits.utf8)])
        #expect(try await onOwnThread { try rig.requests() }.count == 1)
    }

    @Test func theInjectedOrbitsGiveTheReceiversFirstFix() async throws {
        // The stand-in's receiver would take a day to fix from a cold start, and a second with orbits injected: a
        // fix from it shows they reached the modem in time to serve the client that needed them.
        let rig = try Rig()
        let modem = try await onOwnThread { try rig.addModem() }
        try await onOwnThread {
            try rig.modemManager.setReceiver(
                modem, latitude: 48.1173, longitude: 11.5166, coldStart: 86_400, assistedStart: 1)
        }
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await exactClient(rig)
        defer { app.close() }
        let update = try await app.waitForUpdates(1, timeout: .seconds(60))[0]
        let row = try await app.providerRow("modem-gnss")
        let name = String(modem.dropFirst("/org/freedesktop/ModemManager1/".count))
        #expect(
            row.details["modem \(name)"] == .string("registered; sources gps-nmea; predicted orbits injected"),
            "\(row)")
        let values = try await app.getAll(update.new, "io.github.whereabouts1.Location")
        #expect(values["Provider"] == .string("modem-gnss"), "\(values)")
        #expect(values["FixType"] == .string("3d"), "\(values)")
        #expect(abs((values["Latitude"]?.double ?? 0) - 48.1173) < 1e-4, "\(values)")
    }

    @Test func theRequestIsAnAnonymousGETNamingOnlyTheService() async throws {
        let rig = try Rig()
        let modem = try await onOwnThread { try rig.addModem() }
        try await onOwnThread { try rig.harness.startDaemon() }
        try await runExactClient(rig, on: modem)
        let request = try #require(try await onOwnThread { try rig.requests() }.first)
        #expect(request.method == "GET")
        #expect(request.path == Self.orbitsPath)
        #expect(request.body.isEmpty)
        #expect(Set(request.headers.map { $0.name.lowercased() }).isSubset(of: ["host", "user-agent", "accept"]))
        #expect(request.header("User-Agent")?.hasPrefix("whereaboutsd/") == true, "\(request.headers)")
        // Nothing of the modem: its IMEI, device id, or anything the daemon knows of where it is.
        let text = request.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n") + request.path
        for identifier in ["867698040000000", String(repeating: "0", count: 40), "Modem", "imei", "imsi"] {
            #expect(!text.lowercased().contains(identifier.lowercased()), "\(text)")
        }
    }

    @Test func theKeptFileServesARestartedDaemonAndIsFetchedAgainOnceExpired() async throws {
        let rig = try Rig()
        let mm = rig.modemManager
        let modem = try await onOwnThread { try rig.addModem() }
        try await onOwnThread { try rig.harness.startDaemon() }
        try await runExactClient(rig, on: modem)
        rig.harness.daemon?.stop()
        let cacheFile = rig.harness.file("predicted-orbits")
        let kept = try String(contentsOf: cacheFile, encoding: .utf8)
        #expect(kept.hasPrefix("predicted-orbits 1\n"), "\(kept)")

        // Restarted: the file kept is injected without a request.
        try await onOwnThread { try mm.removeModem(modem) }
        let second = try await onOwnThread { try rig.addModem() }
        try await onOwnThread { try rig.harness.startDaemon() }
        try await runExactClient(rig, on: second)
        #expect(try await onOwnThread { try mm.injectedAssistanceData(second) }.count == 1)
        #expect(try await onOwnThread { try rig.requests() }.count == 1)
        rig.harness.daemon?.stop()

        // Its recorded expiry passed: fetched again.
        var lines = kept.split(separator: "\n").map(String.init)
        var fields = lines[1].split(separator: " ").map(String.init)
        fields[1] = fields[0]
        lines[1] = fields.joined(separator: " ")
        try (lines.joined(separator: "\n") + "\n").write(to: cacheFile, atomically: true, encoding: .utf8)
        try await onOwnThread { try mm.removeModem(second) }
        let third = try await onOwnThread { try rig.addModem() }
        try await onOwnThread { try rig.harness.startDaemon() }
        try await runExactClient(rig, on: third)
        #expect(try await onOwnThread { try rig.requests() }.count == 2)
        #expect(try await onOwnThread { try mm.injectedAssistanceData(third) }.count == 1)
    }

    @Test func theNextServerIsAskedWhenOneFailsAndTheConfiguredServersComeFirst() async throws {
        let rig = try Rig(modemGPS: "")
        try rig.server.setResponse(path: "/first.bin", .answer(status: 404, body: "not here"))
        let servers = [rig.server.url("/first.bin"), rig.orbitsURL]
        let mm = rig.modemManager
        let modem = try await onOwnThread { try rig.addModem(servers: servers) }
        try await onOwnThread { try rig.harness.startDaemon() }
        try await runExactClient(rig, on: modem)
        #expect(try await onOwnThread { try rig.requests("/first.bin") }.count == 1)
        #expect(try await onOwnThread { try rig.requests() }.count == 1)
        #expect(try await onOwnThread { try mm.injectedAssistanceData(modem) }.map(\.data) == [Array(Self.orbits.utf8)])
    }

    @Test func assistanceServersReplaceTheModemsList() async throws {
        let rig = try Rig(modemGPS: "assistance-servers=https://127.0.0.1:1/refused.bin, @ORBITS@")
        let config = try String(contentsOf: rig.harness.configFile, encoding: .utf8)
        try config.replacingOccurrences(of: "@ORBITS@", with: rig.orbitsURL)
            .write(to: rig.harness.configFile, atomically: true, encoding: .utf8)
        let modem = try await onOwnThread { try rig.addModem(servers: [rig.server.url("/modems.bin")]) }
        try await onOwnThread { try rig.harness.startDaemon() }
        try await runExactClient(rig, on: modem)
        #expect(try await onOwnThread { try rig.requests("/modems.bin") }.isEmpty)
        #expect(try await onOwnThread { try rig.requests() }.count == 1)
        #expect(try await onOwnThread { try rig.modemManager.injectedAssistanceData(modem) }.count == 1)
    }

    /// Without an exact client nothing is downloaded; nor with `assistance=false` or network positioning off,
    /// though an exact client sets the receiver up.
    @Test(arguments: ["no exact client", "assistance=false", "[network] enable=false"])
    func nothingIsDownloadedWithoutAnExactClientOrWhenTheConfigurationSaysNo(condition: String) async throws {
        let rig = try Rig(
            modemGPS: condition == "assistance=false" ? condition : "",
            extra: condition == "no exact client" ? "\n[static-source]\nenable=true\npath=@DIR@/geolocation\n" : "")
        try write(staticFile, to: rig.harness.file("geolocation"))
        if condition == "[network] enable=false" {
            let config = try String(contentsOf: rig.harness.configFile, encoding: .utf8)
            try config.replacingOccurrences(of: "[network]\n", with: "[network]\nenable=false\n")
                .write(to: rig.harness.configFile, atomically: true, encoding: .utf8)
        }
        let modem = try await onOwnThread { try rig.addModem() }
        try await onOwnThread { try rig.harness.startDaemon() }
        if condition == "no exact client" {
            let app = try await GeoClueTestClient(bus: rig.bus)
            defer { app.close() }
            try await app.waitForProviderRow("modem-gnss", "the modem seen") { $0.available }
            _ = try await app.startedClient(level: 4)
            // The city client's needs have taken effect once the static source runs for it; the receiver is not
            // among them, and only a receiver about to start asks for orbits.
            try await app.waitForProviderRow("static", "the static source running for the city client") { $0.running }
            #expect(try await app.providerRow("modem-gnss").running == false)
            #expect(try await onOwnThread { try rig.modemManager.setupCalls(modem) }.isEmpty)
        } else {
            try await runExactClient(rig, on: modem)
        }
        #expect(try await onOwnThread { try rig.requests() }.isEmpty)
        #expect(try await onOwnThread { try rig.modemManager.injectedAssistanceData(modem) }.isEmpty)
    }

    /// NetworkManager's `Metered` (1 yes, 3 guessed yes, 4 guessed no) and `assistance-metered=`.
    @Test(arguments: [(UInt32(1), false, false), (3, false, false), (4, false, true), (1, true, true)])
    func aMeteredConnectionIsNotUsedUnlessAllowed(metered: UInt32, allowed: Bool, downloads: Bool) async throws {
        let rig = try Rig(modemGPS: allowed ? "assistance-metered=true" : "")
        try await onOwnThread { try rig.networkManager.setMetered(metered) }
        let modem = try await onOwnThread { try rig.addModem() }
        try await onOwnThread { try rig.harness.startDaemon() }
        try await runExactClient(rig, on: modem)
        #expect(try await onOwnThread { try rig.requests() }.count == (downloads ? 1 : 0))
        #expect(
            try await onOwnThread { try rig.modemManager.injectedAssistanceData(modem) }.count == (downloads ? 1 : 0))
    }

    /// Each way a download fails: logged once, and the receiver set up unassisted.
    @Test(arguments: ["refused", "404", "cut-off", "oversized", "oversized-undeclared", "slow"])
    func aFailedDownloadIsLoggedOnceAndTheReceiverStartsUnassisted(failure: String) async throws {
        let rig = try Rig()
        var url = rig.orbitsURL
        switch failure {
        case "refused": url = "https://127.0.0.1:1/xtra3grc.bin"
        case "404": try rig.server.setResponse(path: Self.orbitsPath, .answer(status: 404, body: "gone"))
        case "cut-off":
            try rig.server.setResponse(path: Self.orbitsPath, .truncated(body: "XTRA", declaredBytes: 100_000))
        case "oversized":
            try rig.server.setResponse(path: Self.orbitsPath, .huge(bytes: 2 << 20, declaresLength: true))
        case "oversized-undeclared":
            try rig.server.setResponse(path: Self.orbitsPath, .huge(bytes: 2 << 20, declaresLength: false))
        default: try rig.server.setResponse(path: Self.orbitsPath, .hang)
        }
        let servers = [url]
        let modem = try await onOwnThread { try rig.addModem(servers: servers) }
        try await onOwnThread { try rig.harness.startDaemon() }
        try await runExactClient(rig, on: modem)
        #expect(try await onOwnThread { try rig.modemManager.injectedAssistanceData(modem) }.isEmpty)
        // Another client: the failed servers are not asked again within the hour, so no second line.
        try await runExactClient(rig, on: modem, setups: 2)
        let log = rig.harness.daemonLog
        let lines = log.split(separator: "\n").filter { $0.contains("predicted orbits: https://127.0.0.1") }
        #expect(lines.count == 1, "\(log)")
        #expect(log.contains("no server gave a file"), "\(log)")
    }

    @Test func aModemRefusingTheOrbitsIsLoggedOnceAndSetUpAnyway() async throws {
        let rig = try Rig()
        let modem = try await onOwnThread { try rig.addModem() }
        try await onOwnThread {
            try rig.modemManager.failNextCall(modem, method: "InjectAssistanceData", error: "Unsupported")
        }
        try await onOwnThread { try rig.harness.startDaemon() }
        try await runExactClient(rig, on: modem)
        try await runExactClient(rig, on: modem, setups: 2)
        let injections = try await onOwnThread { try rig.modemManager.injectedAssistanceData(modem) }
        #expect(injections.map(\.error) == ["org.freedesktop.ModemManager1.Error.Core.Unsupported"])
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        let summary = try await app.providerRow("modem-gnss").details["modem Modem/0"]
        #expect(summary?.string?.hasSuffix("; predicted orbits refused") == true, "\(String(describing: summary))")
        let log = rig.harness.daemonLog
        #expect(log.split(separator: "\n").filter { $0.contains("refuses the predicted orbits") }.count == 1, "\(log)")
    }

    @Test func theSUPLServerIsSetWithTheOrbitsOffAndNotOnAModemWithoutAGPS() async throws {
        let rig = try Rig(modemGPS: "assistance=false\nsupl-server=supl.example.net:7275")
        let modem = try await onOwnThread {
            try rig.addModem(capabilities: [.gpsNMEA, ModemManagerMock.agpsMSA])
        }
        let plain = try await onOwnThread { try rig.addModem() }
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await exactClient(rig)
        defer { app.close() }
        try await onOwnThread {
            try rig.waitForReceiverSetups(modem)
            try rig.waitForReceiverSetups(plain)
        }
        let calls = try await onOwnThread { try rig.modemManager.suplServerCalls(modem) }
        #expect(calls.map { String(decoding: $0.data, as: UTF8.self) } == ["supl.example.net:7275"])
        #expect(try await onOwnThread { try rig.modemManager.suplServerCalls(plain) }.isEmpty)
        for each in [modem, plain] {
            #expect(try await onOwnThread { try rig.modemManager.injectedAssistanceData(each) }.isEmpty)
        }
        #expect(try await onOwnThread { try rig.requests() }.isEmpty)
    }

    @Test(arguments: [nil, "supl.example.net:7275"])
    func theSUPLServerIsSetOnlyWhenConfigured(server: String?) async throws {
        let rig = try Rig(modemGPS: server.map { "supl-server=\($0)" } ?? "")
        let modem = try await onOwnThread {
            try rig.addModem(capabilities: [.gpsNMEA, ModemManagerMock.agpsMSA])
        }
        try await onOwnThread { try rig.harness.startDaemon() }
        try await runExactClient(rig, on: modem)
        let calls = try await onOwnThread { try rig.modemManager.suplServerCalls(modem) }
        #expect(calls.map { String(decoding: $0.data, as: UTF8.self) } == (server.map { [$0] } ?? []))
        #expect(calls.allSatisfy { $0.error == nil })
        if server != nil {
            let order = try await onOwnThread { try rig.modemManager.callOrder(modem) }
            #expect(order.firstIndex(of: "SetSuplServer")! < order.firstIndex(of: "Setup")!, "\(order)")
        }
    }
}
