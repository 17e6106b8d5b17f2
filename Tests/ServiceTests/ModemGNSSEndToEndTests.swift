import DBus
import Foundation
import Glibc
import Loop
import TestSupport
import Testing

/// The modem's satellite receiver through the ModemManager stand-in, end to end, for what the real ModemManager
/// on the emulated modem (`RealModemManagerTests`, where the rest of the modem's tests run) cannot show: fixes from
/// epochs the test chooses, with their speed, course and time and five talkers (the emulated receiver streams one
/// position at rest on its own clock with two); a `SetGpsRefreshRate` that fails (ModemManager's own never does on
/// an AT modem); a SIM lock (the emulated modem has no PIN); sentences and property values that are malformed or of
/// the wrong type, which the daemon must survive whatever a ModemManager version passes on.
@Suite("Modem GNSS through ModemManager, end to end", .serialized)
@BusActor
struct ModemGNSSEndToEndTests {
    nonisolated static let config = "[modem-gps]\nenable=true\n"
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
