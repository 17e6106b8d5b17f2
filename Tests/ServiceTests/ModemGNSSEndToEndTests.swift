import DBus
import Foundation
import Glibc
import Loop
import TestSupport
import Testing

/// The modem's satellite receiver through the ModemManager stand-in, end to end: the daemon follows the modems,
/// sets up `gps-nmea` only while an exact client runs and leaves signalling as it found it once none does, paces
/// the receiver by the clients' `TimeThreshold` (a failed pacing made again), and reports a modem disabled,
/// locked, removed and back.
@Suite("Modem GNSS through ModemManager, end to end", .serialized)
@BusActor
struct ModemGNSSEndToEndTests {
    nonisolated static let config = "[modem-gps]\nenable=true\n"
    /// The modem's receiver and its serving cell both on.
    nonisolated static let configWithCells = config + "\n[3g]\nenable=true\n"
    let client = GeoClueTestClient.clientInterface

    /// A bus with the ModemManager stand-in, and the daemon on it (not yet started).
    final class Rig: @unchecked Sendable {
        let bus: PrivateBus
        let modemManager: ModemManagerMock
        let harness: DaemonHarness

        init(config: String = ModemGNSSEndToEndTests.config) throws {
            bus = try PrivateBus(extraPolicy: ModemManagerMock.busPolicy)
            do {
                modemManager = try ModemManagerMock(bus: bus)
                harness = try DaemonHarness(config: config, bus: bus)
            } catch {
                bus.stop()
                throw error
            }
        }

        deinit {
            harness.stop()
            modemManager.stop()
        }
    }

    /// `count` epochs one second apart from now on, moving north-east, each with its own speed and course.
    nonisolated static func epochs(_ count: Int) -> [NMEAEpoch] {
        let first = NMEA.wallNow().rounded(.down)
        return (0..<count).map { index in
            let n = Double(index)
            return NMEAEpoch(
                time: first + n, latitude: 52.5163 + n * 0.0001, longitude: 13.3777 + n * 0.0002,
                speedKnots: 10 + n, course: 30 + n * 5, hdop: 1.2)
        }
    }

    /// The sentences of `epoch` without their line ends, as the modem's GPS port gives them, with `talker`.
    nonisolated static func sentences(_ epoch: NMEAEpoch, talker: String = "GP") -> [String] {
        epoch.sentences.map { sentence in
            let body = sentence.dropFirst(3).prefix { $0 != "*" }
            return NMEA.sentence(talker + body).trimmingCharacters(in: .newlines)
        }
    }

    /// A started exact client with `timeThreshold`.
    func exactClient(_ app: GeoClueTestClient, timeThreshold: UInt32 = 0) async throws -> ObjectPath {
        let path = try await app.getClient()
        try await app.set(path, client, "DesktopId", .string("whereabouts-test"))
        try await app.set(path, client, "RequestedAccuracyLevel", .uint32(8))
        try await app.set(path, client, "TimeThreshold", .uint32(timeThreshold))
        _ = try await app.call(path, client, "Start")
        return path
    }

    /// One registered modem with a GPS, the daemon started, and an app whose exact client is started once the
    /// daemon has seen the modem: the modem's path and the app (which the test closes).
    func exactClientOnARegisteredModem(_ rig: Rig) async throws -> (modem: String, app: GeoClueTestClient) {
        let mm = rig.modemManager
        let modem = try await onOwnThread { try mm.addModem(capabilities: [.gpsNMEA], state: .registered) }
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        do {
            try await app.waitForProviderRow("modem-gnss", "the modem seen") { $0.available }
            _ = try await exactClient(app)
        } catch {
            app.close()
            throw error
        }
        return (modem, app)
    }

    @Test func anExactClientGetsTheModemsFixesWithTheirPositionSpeedAndCourse() async throws {
        let rig = try Rig()
        let mm = rig.modemManager
        let modem = try await onOwnThread {
            try mm.addModem(capabilities: [.threeGPPCell, .gpsNMEA], state: .registered)
        }
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "the modem seen") { $0.available && !$0.running }
        #expect(try await onOwnThread { try mm.setupCalls(modem) }.isEmpty, "set up before any client needed it")

        _ = try await exactClient(app)
        try await onOwnThread {
            try Wait.until("Setup with gps-nmea", timeout: 10) {
                try mm.setupCalls(modem).contains { $0.sources.contains(.gpsNMEA) && $0.signalLocation }
            }
        }
        let epochs = Self.epochs(6)
        for (index, epoch) in epochs.enumerated() {
            let talker = ["GP", "GN", "GL", "GA", "GB", "GN"][index]
            try await onOwnThread { try mm.pushNMEA(modem, Self.sentences(epoch, talker: talker)) }
            try await app.waitFor("fix \(index + 1)", timeout: .seconds(10)) { app.locationUpdates.count > index }
            let fix = try #require(try await app.latestLocation())
            let time = try #require(locationTimestamp(fix["Timestamp"]))
            #expect(abs(epoch.time - time) < 0.001, "fix of \(time) for the epoch of \(epoch.time)")
            #expect(abs((fix["Latitude"]?.double ?? .nan) - epoch.latitude) < 1e-7)
            #expect(abs((fix["Longitude"]?.double ?? .nan) - epoch.longitude) < 1e-7)
            #expect(abs((fix["Speed"]?.double ?? .nan) - epoch.speed) < 0.001)
            #expect(abs((fix["Heading"]?.double ?? .nan) - epoch.course) < 1e-6)
            #expect(fix["Description"] == .string("Modem GNSS"))
        }
        // The receiver is paced by the clients' TimeThreshold (0: every fix).
        #expect(try await onOwnThread { try mm.gpsRefreshRateCalls(modem) }.last?.rate == 0)
        // `whereabouts status` lists the modem and the sources set up on it.
        let harness = rig.harness
        let status = try await onOwnThread { try runCLI(harness, ["status"]) }
        #expect(status.output.contains("provider modem-gnss: available, running"), "\(status.output)")
        #expect(
            status.output.contains("  modem Modem/0: registered; sources 3gpp-lac-ci, gps-nmea\n"), "\(status.output)")

        // The last client gone, the receiver is released.
        app.close()
        try await onOwnThread {
            try Wait.until("Setup without gps-nmea", timeout: 10) {
                try mm.setupCalls(modem).last.map { !$0.sources.contains(.gpsNMEA) } ?? false
            }
        }
    }

    @Test func signallingTheDaemonTurnedOnGoesBackOffWithTheLastExactClient() async throws {
        let rig = try Rig()
        let mm = rig.modemManager
        let modem = try await onOwnThread {
            try mm.addModem(capabilities: [.threeGPPCell, .gpsNMEA], state: .registered)
        }
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "the modem seen") { $0.available }
        let before = try await onOwnThread { try mm.locationSetup(modem) }
        #expect(before.enabled == [.threeGPPCell] && !before.signalsLocation, "\(before)")

        let path = try await exactClient(app)
        try await onOwnThread {
            try Wait.until("gps-nmea set up and signalled", timeout: 10) {
                try mm.locationSetup(modem) == ([.threeGPPCell, .gpsNMEA], true)
            }
        }
        _ = try await app.call(path, client, "Stop")
        try await onOwnThread {
            try Wait.until("gps-nmea off and signalling off again", timeout: 10) {
                try mm.locationSetup(modem) == ([.threeGPPCell], false)
            }
        }
        let last = try #require(try await onOwnThread { try mm.setupCalls(modem) }.last)
        #expect(last.sources == [.threeGPPCell] && !last.signalLocation && last.error == nil, "\(last)")
    }

    @Test func signallingSomethingElseTurnedOnStaysOnAfterTheLastExactClient() async throws {
        let rig = try Rig()
        let mm = rig.modemManager
        let modem = try await onOwnThread {
            let modem = try mm.addModem(capabilities: [.threeGPPCell, .gpsNMEA], state: .registered)
            try mm.setUp(modem, sources: [.threeGPPCell], signalLocation: true)
            return modem
        }
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "the modem seen") { $0.available }
        let path = try await exactClient(app)
        try await onOwnThread {
            try Wait.until("Setup with gps-nmea", timeout: 10) {
                try mm.setupCalls(modem).contains { $0.sources.contains(.gpsNMEA) && $0.error == nil }
            }
        }
        _ = try await app.call(path, client, "Stop")
        try await onOwnThread {
            try Wait.until("Setup without gps-nmea", timeout: 10) {
                try mm.setupCalls(modem).last.map { !$0.sources.contains(.gpsNMEA) } ?? false
            }
        }
        let after = try await onOwnThread { try mm.locationSetup(modem) }
        #expect(after.enabled == [.threeGPPCell] && after.signalsLocation, "\(after)")
    }

    @Test func cityAndNeighbourhoodClientsNeverSetUpTheReceiver() async throws {
        let rig = try Rig(config: Self.configWithCells)
        let mm = rig.modemManager
        let modem = try await onOwnThread {
            try mm.addModem(capabilities: [.threeGPPCell, .gpsNMEA], state: .registered)
        }
        try await onOwnThread { try rig.harness.startDaemon() }
        let city = try await GeoClueTestClient(bus: rig.bus)
        defer { city.close() }
        let neighbourhood = try await GeoClueTestClient(bus: rig.bus)
        defer { neighbourhood.close() }
        try await city.waitForProviderRow("modem-gnss", "the modem seen") { $0.available }
        _ = try await city.startedClient(level: 4)
        _ = try await neighbourhood.startedClient(level: 5)
        // The neighbourhood client has the serving cell signalled; the daemon has taken ModemManager's answer.
        try await onOwnThread {
            try Wait.until("Setup of the cell, signalled", timeout: 10) {
                try mm.setupCalls(modem).contains { $0.sources.contains(.threeGPPCell) && $0.signalLocation }
            }
        }
        try await city.waitForProviderRow("cell", "the cell set up") {
            $0.running && ($0.details["modem Modem/0"]?.string ?? "").hasPrefix("registered; sources 3gpp-lac-ci")
        }
        let row = try await city.providerRow("modem-gnss")
        #expect(row.available && !row.running, "\(row)")
        let calls = try await onOwnThread { try mm.setupCalls(modem) }
        #expect(!calls.contains { $0.sources.contains(.gpsNMEA) }, "\(calls)")

        // Only an exact client sets the receiver up.
        let exact = try await GeoClueTestClient(bus: rig.bus)
        defer { exact.close() }
        _ = try await exactClient(exact)
        try await onOwnThread {
            try Wait.until("Setup with gps-nmea", timeout: 10) {
                try mm.setupCalls(modem).contains { $0.sources.contains(.gpsNMEA) && $0.signalLocation }
            }
        }
    }

    @Test func theRefreshRateFollowsTheSmallestTimeThresholdOfTheExactClients() async throws {
        let rig = try Rig()
        let mm = rig.modemManager
        let modem = try await onOwnThread { try mm.addModem(capabilities: [.gpsNMEA], state: .registered) }
        try await onOwnThread { try rig.harness.startDaemon() }
        let first = try await GeoClueTestClient(bus: rig.bus)
        defer { first.close() }
        let second = try await GeoClueTestClient(bus: rig.bus)
        try await first.waitForProviderRow("modem-gnss", "the modem seen") { $0.available }
        let running = try await exactClient(first, timeThreshold: 20)
        try await waitForRate(mm, modem, 20)
        _ = try await exactClient(second, timeThreshold: 5)
        try await waitForRate(mm, modem, 5)
        second.close()
        try await waitForRate(mm, modem, 20)
        // A running client's new threshold counts at once.
        try await first.set(running, client, "TimeThreshold", .uint32(7))
        try await waitForRate(mm, modem, 7)
    }

    @Test func aRefreshRateThatFailedIsSetAgainWhenTheModemsStateChanges() async throws {
        let rig = try Rig()
        let mm = rig.modemManager
        let modem = try await onOwnThread {
            let modem = try mm.addModem(capabilities: [.gpsNMEA], state: .registered)
            try mm.failNextCall(modem, method: "SetGpsRefreshRate")
            return modem
        }
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "the modem seen") { $0.available }
        _ = try await exactClient(app, timeThreshold: 3)
        try await onOwnThread {
            try Wait.until("a failed SetGpsRefreshRate(3)", timeout: 10) {
                try mm.gpsRefreshRateCalls(modem).contains { $0.rate == 3 && $0.error != nil }
            }
        }
        try await onOwnThread { try mm.setState(modem, .connected) }
        try await onOwnThread {
            try Wait.until("SetGpsRefreshRate(3) again, answered", timeout: 10) {
                try mm.gpsRefreshRateCalls(modem).last.map { $0.rate == 3 && $0.error == nil } ?? false
            }
        }
        #expect(try await onOwnThread { try mm.gpsRefreshRateCalls(modem) }.count == 2)
    }

    func waitForRate(_ mm: ModemManagerMock, _ modem: String, _ rate: UInt32) async throws {
        try await onOwnThread {
            try Wait.until("SetGpsRefreshRate(\(rate))", timeout: 10) {
                try mm.gpsRefreshRateCalls(modem).last?.rate == rate
            }
        }
    }

    @Test func aModemDisabledRemovedAndBackIsReportedAndServedAgain() async throws {
        let rig = try Rig()
        let mm = rig.modemManager
        let (modem, app) = try await exactClientOnARegisteredModem(rig)
        defer { app.close() }

        try await onOwnThread { try mm.setState(modem, .disabled) }
        try await app.waitFor("AvailabilityChanged modem-disabled") {
            app.availabilityChanges.contains { !$0.available && $0.reason == "modem-disabled" }
        }
        try await onOwnThread { try mm.removeModem(modem) }
        try await app.waitForProviderRow("modem-gnss", "no modem") { $0.details["reason"] == .string("no-modem") }
        let again = try await onOwnThread { try mm.addModem(capabilities: [.gpsNMEA], state: .registered) }
        try await app.waitForProviderRow("modem-gnss", "the modem back") { $0.available }
        try await onOwnThread {
            try Wait.until("Setup of the new modem", timeout: 10) {
                try mm.setupCalls(again).contains { $0.sources.contains(.gpsNMEA) }
            }
        }
        for epoch in Self.epochs(2) {
            try await onOwnThread { try mm.pushNMEA(again, Self.sentences(epoch)) }
        }
        try await app.waitFor("a fix from the modem back", timeout: .seconds(10)) { !app.locationUpdates.isEmpty }
        #expect(rig.harness.daemon?.isRunning == true)
    }

    @Test func aModemLockedIsReportedAndServedAgainOnceUnlocked() async throws {
        let rig = try Rig()
        let mm = rig.modemManager
        let (modem, app) = try await exactClientOnARegisteredModem(rig)
        defer { app.close() }
        try await onOwnThread {
            try Wait.until("Setup with gps-nmea", timeout: 10) {
                try mm.setupCalls(modem).contains { $0.sources.contains(.gpsNMEA) && $0.error == nil }
            }
        }

        try await onOwnThread { try mm.setState(modem, .locked) }
        try await app.waitFor("AvailabilityChanged modem-locked") {
            app.availabilityChanges.contains { !$0.available && $0.reason == "modem-locked" }
        }
        try await app.waitForProviderRow("modem-gnss", "the modem locked") {
            !$0.available && $0.details["reason"] == .string("modem-locked")
        }

        try await onOwnThread { try mm.setState(modem, .registered) }
        try await app.waitFor("AvailabilityChanged available once unlocked") {
            app.availabilityChanges.drop { $0.reason != "modem-locked" }.contains { $0.available }
        }
        try await app.waitForProviderRow("modem-gnss", "the modem unlocked") { $0.available && $0.running }
        // The Location interface is new: the receiver is set up on it again, and its fixes served.
        try await onOwnThread {
            try Wait.until("Setup of the unlocked modem", timeout: 10) {
                try mm.locationSetup(modem) == ([.gpsNMEA], true)
            }
            try mm.pushNMEA(modem, Self.sentences(Self.epochs(1)[0]))
        }
        try await app.waitFor("a fix from the unlocked modem", timeout: .seconds(10)) { !app.locationUpdates.isEmpty }
    }

    @Test func modemManagerLeavingAndComingBackIsFollowed() async throws {
        let rig = try Rig()
        let modem = try await onOwnThread {
            try rig.modemManager.addModem(capabilities: [.gpsNMEA], state: .registered)
        }
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "the modem seen") { $0.available }
        _ = try await exactClient(app)
        rig.modemManager.stop()
        try await app.waitFor("AvailabilityChanged no-modem") {
            app.availabilityChanges.contains { !$0.available && $0.reason == "no-modem" }
        }
        let bus = rig.bus
        let restarted = try await onOwnThread { try ModemManagerMock(bus: bus) }
        defer { restarted.stop() }
        let again = try await onOwnThread { try restarted.addModem(capabilities: [.gpsNMEA], state: .registered) }
        #expect(again == modem)
        try await app.waitForProviderRow("modem-gnss", "the modem back") { $0.available }
        try await onOwnThread {
            try Wait.until("Setup on the new ModemManager", timeout: 10) {
                try restarted.setupCalls(again).contains { $0.sources.contains(.gpsNMEA) }
            }
        }
        try await onOwnThread { try restarted.pushNMEA(again, Self.sentences(Self.epochs(1)[0])) }
        try await app.waitFor("a fix through the new ModemManager", timeout: .seconds(10)) {
            !app.locationUpdates.isEmpty
        }
    }

    @Test func setupRefusedByPolkitIsReportedNamingTheRule() async throws {
        let rig = try Rig()
        let mm = rig.modemManager
        let modem = try await onOwnThread {
            try mm.authorise(.deviceControl, users: [])
            return try mm.addModem(capabilities: [.gpsNMEA], state: .registered)
        }
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "the modem seen") { $0.available }
        _ = try await exactClient(app)
        try await app.waitFor("AvailabilityChanged modem-unauthorised") {
            app.availabilityChanges.contains { !$0.available && $0.reason == "modem-unauthorised" }
        }
        let calls = try await onOwnThread { try mm.setupCalls(modem) }
        #expect(calls.count == 1 && calls.first?.error == "org.freedesktop.ModemManager1.Error.Core.Unauthorized")
        let log = rig.harness.daemonLog
        #expect(log.contains("io.github.whereabouts1-modemmanager.rules"), "\(log)")
        #expect(rig.harness.daemon?.isRunning == true)
    }

    @Test func malformedSentencesFromTheModemAreLoggedAndIgnored() async throws {
        let rig = try Rig()
        let mm = rig.modemManager
        let (modem, app) = try await exactClientOnARegisteredModem(rig)
        defer { app.close() }
        try await onOwnThread {
            try Wait.until("Setup with gps-nmea", timeout: 10) { try !mm.setupCalls(modem).isEmpty }
        }
        let epochs = Self.epochs(3)
        let garbage = ["$GPGGA,not,a,fix*00", "$GNRMC,123519,A,9999.999,N*7F", "$GPXYZ", "\u{1}\u{2}binary"]
        for (index, epoch) in epochs.enumerated() {
            try await onOwnThread { try mm.pushNMEA(modem, [garbage[index]] + Self.sentences(epoch) + [garbage[3]]) }
            try await app.waitFor("fix \(index + 1)", timeout: .seconds(10)) { app.locationUpdates.count > index }
        }
        let row = try await app.providerRow("modem-gnss")
        #expect((row.details["rejected-sentences"]?.uint32 ?? 0) > 0, "\(row)")
        let warnings = rig.harness.daemonLog.components(separatedBy: "ignoring a bad sentence").count - 1
        #expect(warnings == 1, "\(rig.harness.daemonLog)")
        #expect(rig.harness.daemon?.isRunning == true)
    }

    @Test func modemManagerStartingAfterTheDaemonIsFollowed() async throws {
        let rig = try Rig()
        rig.modemManager.stop()
        try await onOwnThread { try rig.harness.startDaemon() }
        let app = try await GeoClueTestClient(bus: rig.bus)
        defer { app.close() }
        try await app.waitForProviderRow("modem-gnss", "no modem") { $0.details["reason"] == .string("no-modem") }
        _ = try await exactClient(app)
        let bus = rig.bus
        let late = try await onOwnThread { try ModemManagerMock(bus: bus) }
        defer { late.stop() }
        let modem = try await onOwnThread { try late.addModem(capabilities: [.gpsNMEA], state: .registered) }
        try await app.waitForProviderRow("modem-gnss", "the modem seen") { $0.available && $0.running }
        try await onOwnThread {
            try Wait.until("Setup on the late ModemManager", timeout: 10) { try !late.setupCalls(modem).isEmpty }
            try late.pushNMEA(modem, Self.sentences(Self.epochs(1)[0]))
        }
        try await app.waitFor("a fix", timeout: .seconds(10)) { !app.locationUpdates.isEmpty }
    }

    @Test func valuesOfTheWrongTypeAreLoggedAndIgnored() async throws {
        let rig = try Rig()
        let mm = rig.modemManager
        let (modem, app) = try await exactClientOnARegisteredModem(rig)
        defer { app.close() }
        try await onOwnThread {
            try Wait.until("Setup with gps-nmea", timeout: 10) { try !mm.setupCalls(modem).isEmpty }
            try mm.emitRawPropertiesChanged(
                modem, interface: ModemManagerMock.modemInterface,
                changed: ["2", "State", "s", "registered", "AccessTechnologies", "d", "1.5"])
            try mm.emitRawPropertiesChanged(
                modem, interface: ModemManagerMock.locationInterface,
                changed: [
                    "3", "Enabled", "s", "gps-nmea", "SignalsLocation", "u", "1", "Location", "a{uv}", "3", "4", "u",
                    "7", "1", "ai", "2", "1", "2", "8", "a{sv}", "1", "latitude", "s", "north",
                ])
            try mm.emitRawPropertiesChanged(
                modem, interface: ModemManagerMock.locationInterface, changed: ["1", "Location", "s", "nowhere"])
        }
        // The modem is still what it was: registered, its receiver set up, its next fix delivered.
        try await onOwnThread { try mm.pushNMEA(modem, Self.sentences(Self.epochs(1)[0])) }
        try await app.waitFor("a fix after the bad values", timeout: .seconds(10)) { !app.locationUpdates.isEmpty }
        let row = try await app.providerRow("modem-gnss")
        #expect(row.available && row.details["modem Modem/0"] == .string("registered; sources gps-nmea"), "\(row)")
        let log = rig.harness.daemonLog
        #expect(log.components(separatedBy: "bad values so far").count - 1 == 1, "logged more than once: \(log)")
        #expect(log.contains("State is s"), "\(log)")
        #expect(rig.harness.daemon?.isRunning == true)
    }
}
