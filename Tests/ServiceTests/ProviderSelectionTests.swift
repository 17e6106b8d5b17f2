import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

/// Static source and gpsd, gpsd being whatever listens on 127.0.0.1:`port` (a plain TCP listener in these tests).
func staticAndGPSDConfig(port: UInt16, staticPath: String = "@DIR@/geolocation") -> String {
    """
    [static-source]
    enable=true
    path=\(staticPath)

    """ + gpsdConfig(port: port)
}

@Suite("Providers chosen by accuracy level, end to end", .serialized)
@BusActor
struct ProviderSelectionTests {
    let client = GeoClueTestClient.clientInterface

    /// Whether the provider `kind` runs, as `io.github.whereabouts1.Manager.Providers` says.
    @BusActor
    static func isRunning(_ kind: String, _ app: GeoClueTestClient) async throws -> Bool {
        let rows = try await app.get(GeoClueTestClient.managerPath, "io.github.whereabouts1.Manager", "Providers")
        guard let row = rows.elements?.first(where: { $0.fields?.first?.string == kind }), let fields = row.fields,
            fields.count == 5, let running = fields[3].bool
        else { throw TestEnvironmentError("no \(kind) provider in \(rows)") }
        return running
    }

    @Test func clientsBelowExactNeverConnectToGPSDAndTheLastExactClientDisconnects() async throws {
        let gpsd = try TCPListener()
        defer { gpsd.close() }
        let harness = try await startedHarness(
            config: staticAndGPSDConfig(port: gpsd.port), files: ["geolocation": staticFile])
        defer { harness.stop() }

        // Country, city, neighbourhood and street clients: the static source serves them, gpsd is left alone.
        var coarse: [(app: GeoClueTestClient, path: ObjectPath)] = []
        defer { for entry in coarse { entry.app.close() } }
        for level: UInt32 in [1, 4, 5, 6] {
            let app = try await GeoClueTestClient(bus: harness.bus)
            coarse.append((app, try await app.startedClient(level: level)))
            _ = try await app.waitForUpdates(1)
        }
        // The providers a client needs are started before the service reads its next call: gpsd is not running.
        #expect(try await Self.isRunning("gpsd", coarse[0].app) == false, "a client below exact woke gpsd")
        #expect(gpsd.accepted == 0, "a client below exact woke gpsd")

        // An exact client connects to gpsd, once, and asks for its latest fix.
        let exact = try await GeoClueTestClient(bus: harness.bus)
        defer { exact.close() }
        let exactPath = try await exact.startedClient(level: 8)
        try await eventually("the daemon to connect to gpsd") { gpsd.accepted == 1 }
        try await eventually("?WATCH and ?POLL") {
            let sent = gpsd.peers.first?.received ?? ""
            return sent.contains("?WATCH={") && sent.contains("\"enable\":true") && sent.contains("?POLL;")
        }
        #expect(try await exact.availableLevel() == 8)

        // Stopping the only exact client closes the connection; the coarse clients keep being served.
        let stopped = monotonicNanoseconds()
        _ = try await exact.call(exactPath, client, "Stop")
        try await eventually("the connection to gpsd to close", timeout: .seconds(5)) { gpsd.open == 0 }
        let closedAt = try #require(gpsd.peers.first?.closedAt)
        print("last exact client stopped: gpsd connection closed \(Double(closedAt - stopped) / 1e6) ms later")
        #expect(try await Self.isRunning("gpsd", coarse[0].app) == false, "gpsd runs without an exact client")
        #expect(gpsd.accepted == 1, "the daemon reconnected to gpsd without an exact client")
        for entry in coarse {
            #expect(try await entry.app.get(entry.path, client, "Active") == .boolean(true))
        }
    }

    @Test func exactClientsShareOneConnectionReleasedWithTheLastOne() async throws {
        let gpsd = try TCPListener()
        defer { gpsd.close() }
        let harness = try await startedHarness(config: gpsdConfig(port: gpsd.port))
        defer { harness.stop() }
        let first = try await GeoClueTestClient(bus: harness.bus)
        defer { first.close() }
        let second = try await GeoClueTestClient(bus: harness.bus)
        defer { second.close() }
        let firstPath = try await first.startedClient(level: 8)
        _ = try await second.startedClient(level: 8)
        try await eventually("the daemon to connect to gpsd and send ?WATCH") {
            gpsd.peers.first?.received.contains("?WATCH={") == true
        }
        #expect(gpsd.accepted == 1, "one connection serves every exact client")

        // The providers follow a Stop before the service reads the next call: gpsd still runs for the other client.
        _ = try await first.call(firstPath, client, "Stop")
        #expect(try await Self.isRunning("gpsd", first), "gpsd stopped while an exact client was active")
        #expect(gpsd.open == 1, "the connection closed while an exact client was active")

        // The last exact client goes away with its bus connection, not by Stop.
        second.close()
        try await eventually("the connection to gpsd to close", timeout: .seconds(5)) { gpsd.open == 0 }

        // A new exact client connects again.
        _ = try await first.call(firstPath, client, "Start")
        try await eventually("the daemon to connect to gpsd again") { gpsd.accepted == 2 && gpsd.open == 1 }
    }

    @Test func availableAccuracyLevelFollowsProviders() async throws {
        // gpsd is not running yet and the static file does not exist yet.
        let port = try LoopbackTCP.freePort()
        let harness = try await startedHarness(config: staticAndGPSDConfig(port: port))
        defer { harness.stop() }
        let observer = try await GeoClueTestClient(bus: harness.bus)
        defer { observer.close() }
        // Until a connection attempt fails, gpsd counts as available (GPSDProvider's documented rule).
        #expect(try await observer.availableLevel() == 8)

        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        _ = try await app.startedClient(level: 8)
        try await awaitLevels([0], "gpsd refused", observer, harness)
        #expect(try await observer.availableLevel() == 0)

        // gpsd appears: the provider reconnects within its backoff.
        let appeared = ContinuousClock.now
        let gpsd = try TCPListener(port: port)
        defer { gpsd.close() }
        try await awaitLevels([0, 8], "gpsd came", observer, harness)
        print("gpsd appeared: reconnected after \((ContinuousClock.now - appeared).seconds) s")
        #expect(gpsd.accepted == 1)

        // gpsd goes away (it closes the connection and stops listening).
        gpsd.close()
        await gpsd.closed()
        try await awaitLevels([0, 8, 0], "gpsd left", observer, harness)

        // The static file appears: the static source is available, and serves the active client.
        try write(staticFile, to: harness.file("geolocation"))
        try await awaitLevels([0, 8, 0, 8], "the static file appeared", observer, harness)
        _ = try await app.waitForUpdates(1)
        #expect(try await app.latestLocation()?["Latitude"] == .double(48.8584))
        // The level a client asked for does not change what the Manager announces, and every peer heard it.
        #expect(app.announcedAvailableLevels == observer.announcedAvailableLevels)
    }

    /// Waits until `observer` has heard exactly `levels` announced; the failure shows what it heard and the log.
    func awaitLevels(
        _ levels: [UInt32], _ what: String, _ observer: GeoClueTestClient, _ harness: DaemonHarness,
        timeout: Duration = .seconds(10)
    ) async throws {
        do {
            try await observer.waitFor("AvailableAccuracyLevel \(levels.last ?? 0) (\(what))", timeout: timeout) {
                observer.announcedAvailableLevels.count >= levels.count
            }
        } catch {
            Issue.record("\(error); announced so far: \(observer.announcedAvailableLevels)\n\(harness.daemonLog)")
            throw error
        }
        #expect(observer.announcedAvailableLevels == levels, "after \(what)\n\(harness.daemonLog)")
    }

    @Test func aGPSDThatHangsUpAtOnceIsRetriedWithBackoff() async throws {
        // Something accepts on gpsd's port and hangs up at once (a gpsd at its client limit, a dying gpsd whose
        // listening socket outlives its connections by a moment, or another service on the port). The provider
        // should back off as it does when the connection is refused, not reconnect in a tight loop.
        let gpsd = try TCPListener(hangUp: true)
        defer { gpsd.close() }
        let harness = try await startedHarness(config: gpsdConfig(port: gpsd.port))
        defer { harness.stop() }
        // A bare connection, without GeoClueTestClient's catch-all match rule: should the Manager flood
        // PropertiesChanged, this test process is not the one to drown in it (other suites share its bus thread).
        let connection = try Connection.open(address: harness.bus.address)
        defer { connection.close() }
        func call(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [])
            async throws -> [DBusValue]
        {
            try await connection.call(
                destination: GeoClueTestClient.service, path: path, interface: interface, member: member,
                arguments: arguments, timeout: .seconds(10))
        }
        let path = try #require(
            try await call(GeoClueTestClient.managerPath, GeoClueTestClient.managerInterface, "GetClient").first?
                .objectPath)
        let properties = "org.freedesktop.DBus.Properties"
        _ = try await call(
            path, properties, "Set", [.string(client), .string("DesktopId"), .variant(.string("whereabouts-test"))])
        _ = try await call(
            path, properties, "Set", [.string(client), .string("RequestedAccuracyLevel"), .variant(.uint32(8))])
        _ = try await call(path, client, "Start")
        // Four attempts follow the backoff's pauses, 0.25, 0.5 and 1 s: at least 1.75 s from the first to the fourth,
        // of which a listener late to accept the first could hide a part. A provider in a tight loop makes the four in
        // a few milliseconds (and the listener, one thread, cannot record them sooner than the daemon makes them).
        try await eventually("the daemon to connect to gpsd four times", timeout: .seconds(30)) { gpsd.accepted >= 4 }
        harness.daemon?.stop()
        let peers = gpsd.peers
        let span = Double(peers[3].acceptedAt - peers[0].acceptedAt) / 1e9
        let announced = harness.daemonLog.components(separatedBy: "gpsd: connected to").count - 1
        print("gpsd hanging up at once: four connections in \(span) s (\(announced) logged as connected)")
        #expect(span >= 0.75, "four connections in \(span) s")
    }
}
