import Foundation
import Glibc
import TestBasics
import TestSupport
import Testing

/// The ModemManager stand-in on a private bus, checked through `busctl` (as root, and as `nobody` for a caller
/// polkit would refuse): its object tree, ModemManager's refusals of `Setup`, and the Location it gathers.
@Suite("ModemManager stand-in: the Location API as ModemManager 1.20 serves it", .serialized)
struct ModemManagerStandInTests {
    static let unauthorised = "org.freedesktop.ModemManager1.Error.Core.Unauthorized"
    static let wrongState = "org.freedesktop.ModemManager1.Error.Core.WrongState"
    static let unsupported = "org.freedesktop.ModemManager1.Error.Core.Unsupported"
    static let gga = "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47"
    static let rmc = "$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A"

    /// A bus with the stand-in; both stop when the test ends.
    final class Environment: @unchecked Sendable {
        let bus: PrivateBus
        let modemManager: ModemManagerMock

        init() throws {
            bus = try PrivateBus(extraPolicy: ModemManagerMock.busPolicy)
            do {
                modemManager = try ModemManagerMock(bus: bus)
            } catch {
                bus.stop()
                throw error
            }
        }

        /// Runs busctl on the bus as `user` (nil: root).
        func busctl(_ arguments: [String], asUser user: String? = nil) throws -> CommandResult {
            try Unprivileged.run(
                [try Executables.find("busctl").path, "--address=\(bus.address)"] + arguments, asUser: user,
                environment: bus.environment, in: bus.directory)
        }

        /// Calls `member` of the Location interface of `modem` as `user`.
        func location(_ modem: String, _ member: String, _ arguments: [String] = [], asUser user: String? = nil)
            throws -> CommandResult
        {
            try busctl(
                ["call", "--", ModemManagerMock.busName, modem, ModemManagerMock.locationInterface, member]
                    + arguments, asUser: user)
        }

        /// The words of property `name` of the Location interface of `modem`.
        func locationProperty(_ modem: String, _ name: String) throws -> [String] {
            let result = try busctl(
                ["get-property", ModemManagerMock.busName, modem, ModemManagerMock.locationInterface, name])
            guard result.status == 0 else { throw TestEnvironmentError("\(name): \(result.output)") }
            return BusctlWords.split(result.output)
        }

        /// The words of `GetManagedObjects`.
        func managedObjects() throws -> [String] {
            let result = try busctl([
                "call", ModemManagerMock.busName, ModemManagerMock.managerPath, "org.freedesktop.DBus.ObjectManager",
                "GetManagedObjects",
            ])
            guard result.status == 0 else { throw TestEnvironmentError("GetManagedObjects: \(result.output)") }
            return BusctlWords.split(result.output)
        }

        deinit {
            modemManager.stop()
            bus.stop()
        }
    }

    @Test func modemsAreManagedObjectsAndLocationAppearsPastTheLock() throws {
        let environment = try Environment()
        let mm = environment.modemManager
        let modem = try mm.addModem(capabilities: [.threeGPPCell, .gpsNMEA])
        let locked = try mm.addModem(capabilities: [.threeGPPCell], state: .locked)
        #expect(modem == "/org/freedesktop/ModemManager1/Modem/0")
        #expect(locked == "/org/freedesktop/ModemManager1/Modem/1")
        var objects = try environment.managedObjects()
        #expect(objects.prefix(2) == ["a{oa{sa{sv}}}", "2"], "\(objects)")
        #expect(objects.contains(modem) && objects.contains(locked), "\(objects)")
        // A locked modem has no Location interface yet.
        #expect(objects.count { $0 == ModemManagerMock.modemInterface } == 2, "\(objects)")
        #expect(objects.count { $0 == ModemManagerMock.locationInterface } == 1, "\(objects)")
        #expect(try environment.locationProperty(modem, "Capabilities") == ["u", "5"])
        #expect(try environment.locationProperty(modem, "Enabled") == ["u", "0"])
        #expect(try environment.locationProperty(modem, "GpsRefreshRate") == ["u", "30"])

        try mm.setState(locked, .disabled)
        objects = try environment.managedObjects()
        #expect(objects.count { $0 == ModemManagerMock.locationInterface } == 2, "\(objects)")
        try mm.removeModem(modem)
        objects = try environment.managedObjects()
        #expect(objects.prefix(2) == ["a{oa{sa{sv}}}", "1"] && !objects.contains(modem), "\(objects)")
    }

    @Test func setupIsRefusedForAUserPolkitRefuses() throws {
        let environment = try Environment()
        let mm = environment.modemManager
        let nobody = try #require(getpwnam("nobody")?.pointee.pw_uid)
        let modem = try mm.addModem(capabilities: [.threeGPPCell, .gpsNMEA], state: .enabled)
        // Enabling the modem enabled its non-GPS source.
        #expect(try environment.locationProperty(modem, "Enabled") == ["u", "1"])

        let refused = try environment.location(modem, "Setup", ["ub", "5", "true"], asUser: "nobody")
        #expect(refused.status != 0, "\(refused.output)")
        #expect(
            refused.output.contains(
                "PolicyKit authorization failed: not authorized for 'org.freedesktop.ModemManager1.Device.Control'"),
            "\(refused.output)")
        #expect(try environment.locationProperty(modem, "Enabled") == ["u", "1"])
        #expect(try environment.locationProperty(modem, "SignalsLocation") == ["b", "false"])

        try mm.authorise(.deviceControl, users: [0, nobody])
        let allowed = try environment.location(modem, "Setup", ["ub", "5", "true"], asUser: "nobody")
        #expect(allowed.status == 0, "\(allowed.output)")
        #expect(try environment.locationProperty(modem, "Enabled") == ["u", "5"])
        #expect(
            try mm.setupCalls(modem) == [
                .init(uid: nobody, sources: [.threeGPPCell, .gpsNMEA], signalLocation: true, error: Self.unauthorised),
                .init(uid: nobody, sources: [.threeGPPCell, .gpsNMEA], signalLocation: true, error: nil),
            ])
    }

    @Test func setupNeedsAnEnabledModemAndSupportedSources() throws {
        let environment = try Environment()
        let mm = environment.modemManager
        let modem = try mm.addModem(capabilities: [.threeGPPCell, .gpsNMEA])
        let disabled = try environment.location(modem, "Setup", ["ub", "4", "true"])
        #expect(disabled.output.contains("Cannot setup location: device not yet enabled"), "\(disabled.output)")
        try mm.setState(modem, .enabled)
        let raw = try environment.location(modem, "Setup", ["ub", "6", "true"])
        #expect(raw.output.contains("Cannot enable unsupported location sources: 'gps-raw'"), "\(raw.output)")
        let rate = try environment.location(modem, "SetGpsRefreshRate", ["u", "5"])
        #expect(rate.status == 0, "\(rate.output)")
        #expect(
            try mm.setupCalls(modem) == [
                .init(uid: 0, sources: .gpsNMEA, signalLocation: true, error: Self.wrongState),
                .init(uid: 0, sources: [.gpsRaw, .gpsNMEA], signalLocation: true, error: Self.unsupported),
            ])
        #expect(try mm.gpsRefreshRateCalls(modem) == [.init(uid: 0, rate: 5, error: nil)])
        #expect(try environment.locationProperty(modem, "GpsRefreshRate") == ["u", "5"])
        #expect(try environment.locationProperty(modem, "Enabled") == ["u", "1"])
    }

    @Test func locationAfterSetupHasTheServingCellAndTheSentences() throws {
        let environment = try Environment()
        let mm = environment.modemManager
        let modem = try mm.addModem(capabilities: [.threeGPPCell, .gpsNMEA], state: .registered)
        try mm.setServingCell(modem, operatorCode: "26201", lac: 0x1A2B, tac: 0, cellID: 0xC0FFEE)
        #expect(try environment.location(modem, "Setup", ["ub", "5", "true"]).status == 0)
        #expect(try environment.location(modem, "SetGpsRefreshRate", ["u", "0"]).status == 0)
        try mm.pushNMEA(modem, [Self.gga, Self.rmc])

        let expected = ["1", "s", "262,01,1A2B,C0FFEE,0", "4", "s", Self.rmc + "\r\n\r\n" + Self.gga + "\r\n"]
        let answer = try environment.location(modem, "GetLocation")
        #expect(BusctlWords.split(answer.output) == ["a{uv}", "2"] + expected, "\(answer.output)")
        #expect(try environment.locationProperty(modem, "Location") == ["a{uv}", "2"] + expected)
        #expect(try mm.gpsRefreshRateCalls(modem) == [.init(uid: 0, rate: 0, error: nil)])

        // An LTE cell of another operator: a tracking area code instead of a location area code, and the new
        // operator only once the modem has searched, as ModemManager reads the operator when the registration
        // changes.
        try mm.setServingCell(modem, operatorCode: "310260", lac: 0, tac: 0x6FFE, cellID: 0x1CEA_D8F0)
        let sameOperator = try environment.locationProperty(modem, "Location")
        #expect(sameOperator.prefix(5) == ["a{uv}", "2", "1", "s", "262,01,0,1CEAD8F0,6FFE"], "\(sameOperator)")
        try mm.setState(modem, .searching)
        try mm.setState(modem, .registered)
        let lte = try environment.locationProperty(modem, "Location")
        #expect(lte.prefix(5) == ["a{uv}", "2", "1", "s", "310,260,0,1CEAD8F0,6FFE"], "\(lte)")
    }

    @Test func theLocationPropertyFollowsOnlyWhenSignalled() throws {
        let environment = try Environment()
        let mm = environment.modemManager
        let modem = try mm.addModem(capabilities: [.threeGPPCell, .gpsNMEA], state: .enabled)
        #expect(try environment.location(modem, "Setup", ["ub", "4", "false"]).status == 0)
        try mm.pushNMEA(modem, [Self.gga])
        #expect(try environment.locationProperty(modem, "Location") == ["a{uv}", "0"])
        let answer = try environment.location(modem, "GetLocation")
        #expect(BusctlWords.split(answer.output) == ["a{uv}", "1", "4", "s", Self.gga + "\r\n"], "\(answer.output)")

        // Signalling on: Location shows what was gathered; with the default refresh of 30 s a second sentence
        // soon after the first reaches GetLocation but not the property.
        #expect(try environment.location(modem, "Setup", ["ub", "4", "true"]).status == 0)
        let first = ["a{uv}", "1", "4", "s", Self.gga + "\r\n"]
        #expect(try environment.locationProperty(modem, "Location") == first)
        try mm.pushNMEA(modem, [Self.rmc])
        #expect(try environment.locationProperty(modem, "Location") == first)
        let both = try environment.location(modem, "GetLocation")
        let value = Self.rmc + "\r\n\r\n" + Self.gga + "\r\n"
        #expect(BusctlWords.split(both.output) == ["a{uv}", "1", "4", "s", value], "\(both.output)")
    }
}
