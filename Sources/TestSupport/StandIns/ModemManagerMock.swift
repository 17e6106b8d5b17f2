import Foundation
import Glibc
import TestBasics

/// A stand-in for ModemManager (1.20, as Debian 12 has it) on a ``PrivateBus``: the project's
/// `Tests/StandIns/modemmanager_mock.py`, owning `org.freedesktop.ModemManager1`.
///
/// It serves ModemManager's manager object with its object manager, and modems at
/// `/org/freedesktop/ModemManager1/Modem/N` with `org.freedesktop.ModemManager1.Modem` and, while a modem is past
/// its SIM lock, `org.freedesktop.ModemManager1.Modem.Location`: `Setup`, `GetLocation`, `SetGpsRefreshRate` with
/// ModemManager's checks and error names (polkit's refusal by the caller's Unix user, a modem not yet enabled,
/// unsupported sources), the Location dictionary as ModemManager builds it, and `PropertiesChanged` for it only
/// while `SignalsLocation` is on (the script's own documentation has the details). This wrapper drives the
/// script's control interface with `busctl`: modems added and removed, their state, the network's serving cell,
/// NMEA from the GPS port, the users polkit authorises, a call made to fail once, the `Setup`,
/// `SetGpsRefreshRate`, `SetSuplServer` and `InjectAssistanceData` calls received (the bytes injected included) and
/// the order of the Location calls; it also reads a modem's Location setup and calls `Setup` as another program.
///
/// The bus must let root own `org.freedesktop.ModemManager1` and callers use it as ModemManager's own policy does:
/// create it with `PrivateBus(extraPolicy: ModemManagerMock.busPolicy)`.
public final class ModemManagerMock: BusServiceMock, @unchecked Sendable {
    public static let busName = "org.freedesktop.ModemManager1"
    public static let managerPath = "/org/freedesktop/ModemManager1"
    public static let modemInterface = "org.freedesktop.ModemManager1.Modem"
    public static let locationInterface = "org.freedesktop.ModemManager1.Modem.Location"
    /// The script.
    public static let script = ProjectPaths.standIns.appendingPathComponent("modemmanager_mock.py")
    static let controlPath = "/io/github/whereabouts1/Test/ModemManager"
    static let controlInterface = "io.github.whereabouts1.Test.ModemManager"

    /// ModemManager's bus policy (`org.freedesktop.ModemManager1.conf`, polkit build) for what the stand-in
    /// serves: root owns the name and may call anything (the control interface included); everyone may
    /// introspect, read properties, list the objects and call the methods polkit guards.
    public static let busPolicy = """
        <policy user="root">
          <allow own="org.freedesktop.ModemManager1"/>
          <allow send_destination="org.freedesktop.ModemManager1"/>
        </policy>
        <policy context="default">
          <allow send_destination="org.freedesktop.ModemManager1" send_interface="org.freedesktop.DBus.Introspectable"/>
          <allow send_destination="org.freedesktop.ModemManager1" send_interface="org.freedesktop.DBus.Properties"/>
          <allow send_destination="org.freedesktop.ModemManager1" send_interface="org.freedesktop.DBus.ObjectManager"/>
          <allow send_destination="org.freedesktop.ModemManager1" send_interface="org.freedesktop.ModemManager1"
                 send_member="ScanDevices"/>
          <allow send_destination="org.freedesktop.ModemManager1" send_interface="org.freedesktop.ModemManager1"
                 send_member="SetLogging"/>
          <allow send_destination="org.freedesktop.ModemManager1" send_interface="org.freedesktop.ModemManager1.Modem"
                 send_member="ListBearers"/>
          <allow send_destination="org.freedesktop.ModemManager1" send_interface="org.freedesktop.ModemManager1.Modem"
                 send_member="Enable"/>
          <allow send_destination="org.freedesktop.ModemManager1"
                 send_interface="org.freedesktop.ModemManager1.Modem.Location" send_member="Setup"/>
          <allow send_destination="org.freedesktop.ModemManager1"
                 send_interface="org.freedesktop.ModemManager1.Modem.Location" send_member="SetSuplServer"/>
          <allow send_destination="org.freedesktop.ModemManager1"
                 send_interface="org.freedesktop.ModemManager1.Modem.Location" send_member="InjectAssistanceData"/>
          <allow send_destination="org.freedesktop.ModemManager1"
                 send_interface="org.freedesktop.ModemManager1.Modem.Location" send_member="SetGpsRefreshRate"/>
          <allow send_destination="org.freedesktop.ModemManager1"
                 send_interface="org.freedesktop.ModemManager1.Modem.Location" send_member="GetLocation"/>
        </policy>
        """

    /// ModemManager's `MMModemLocationSource` bits.
    public struct LocationSources: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// The serving cell: `"MCC,MNC,LAC,CI,TAC"`.
        public static let threeGPPCell = LocationSources(rawValue: 1 << 0)
        /// The GGA fix as a dictionary.
        public static let gpsRaw = LocationSources(rawValue: 1 << 1)
        /// NMEA sentences.
        public static let gpsNMEA = LocationSources(rawValue: 1 << 2)
        /// The CDMA base station's position.
        public static let cdmaBaseStation = LocationSources(rawValue: 1 << 3)
    }

    /// `MM_MODEM_LOCATION_ASSISTANCE_DATA_TYPE_XTRA`, for `SupportedAssistanceData`.
    public static let xtra: UInt32 = 1 << 0
    /// `MM_MODEM_LOCATION_SOURCE_AGPS_MSA`, which a modem needs to take a SUPL server.
    public static let agpsMSA = LocationSources(rawValue: 1 << 5)

    /// One `InjectAssistanceData` or `SetSuplServer` call a modem received.
    public struct AssistanceCall: Sendable, Equatable {
        public let uid: uid_t
        /// The bytes injected, or the SUPL server's text as UTF-8.
        public let data: [UInt8]
        /// The D-Bus error it was answered with; nil when it succeeded.
        public let error: String?
    }

    /// ModemManager's `MMModemState`.
    public enum ModemState: Int32, Sendable {
        case failed = -1
        case unknown = 0
        case initializing = 1
        case locked = 2
        case disabled = 3
        case disabling = 4
        case enabling = 5
        case enabled = 6
        case searching = 7
        case registered = 8
        case disconnecting = 9
        case connecting = 10
        case connected = 11
    }

    /// ModemManager's `MMModemAccessTechnology` bits (the common ones).
    public struct AccessTechnologies: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let gsm = AccessTechnologies(rawValue: 1 << 1)
        public static let umts = AccessTechnologies(rawValue: 1 << 5)
        public static let lte = AccessTechnologies(rawValue: 1 << 14)
        public static let nr5g = AccessTechnologies(rawValue: 1 << 15)
    }

    /// The polkit actions ModemManager checks.
    public enum Action: String, Sendable {
        /// `Setup`, `SetGpsRefreshRate`, `Enable` and the other device controls.
        case deviceControl = "org.freedesktop.ModemManager1.Device.Control"
        /// `GetLocation`.
        case location = "org.freedesktop.ModemManager1.Location"
    }

    /// One `Setup` call a modem received.
    public struct SetupCall: Sendable, Equatable {
        public let uid: uid_t
        public let sources: LocationSources
        public let signalLocation: Bool
        /// The D-Bus error it was answered with; nil when it succeeded.
        public let error: String?

        public init(uid: uid_t, sources: LocationSources, signalLocation: Bool, error: String?) {
            self.uid = uid
            self.sources = sources
            self.signalLocation = signalLocation
            self.error = error
        }
    }

    /// One `SetGpsRefreshRate` call a modem received.
    public struct RefreshRateCall: Sendable, Equatable {
        public let uid: uid_t
        /// Seconds.
        public let rate: UInt32
        /// The D-Bus error it was answered with; nil when it succeeded.
        public let error: String?

        public init(uid: uid_t, rate: UInt32, error: String?) {
            self.uid = uid
            self.rate = rate
            self.error = error
        }
    }

    /// The stand-in serving the mock's bus name.
    public let standIn: BusStandIn

    /// Starts the stand-in and returns once it owns `org.freedesktop.ModemManager1`; polkit authorises only root
    /// until ``authorise(_:users:)`` says otherwise.
    public init(bus: PrivateBus) throws {
        try Self.checkPython(in: bus.directory)
        standIn = try BusStandIn(
            bus: bus, busName: Self.busName, label: "the ModemManager stand-in", arguments: [Self.script.path],
            logName: "modemmanager-mock")
    }

    /// Fails with a clear message unless Debian's Python has GLib's bindings.
    static func checkPython(in directory: URL) throws {
        let check = try Unprivileged.run(
            [BusStandIn.python.path, "-c", "from gi.repository import Gio, GLib"], asUser: nil,
            environment: ProcessInfo.processInfo.environment, in: directory, timeout: 30)
        guard check.status == 0 else {
            throw TestEnvironmentError(
                "\(BusStandIn.python.path) lacks GLib's bindings; install python3-gi:\n\(check.output)")
        }
    }

    /// Adds a modem (`InterfacesAdded`) and returns its object path. It appears in `state` if that is disabled or
    /// below, else disabled and then moves to `state` with `StateChanged`, as an enabled modem does;
    /// `accessTechnologies` are the network's, shown while it is registered.
    /// `assistanceData` is its `SupportedAssistanceData` (``xtra``: it takes predicted orbits) and
    /// `assistanceServers` its `AssistanceDataServers`.
    @discardableResult
    public func addModem(
        capabilities: LocationSources, state: ModemState = .disabled, accessTechnologies: AccessTechnologies = .lte,
        assistanceData: UInt32 = 0, assistanceServers: [String] = []
    ) throws -> String {
        let output = try control(
            "AddModem",
            [
                "a{sv}", "5", "LocationCapabilities", "u", String(capabilities.rawValue), "State", "i",
                String(state.rawValue), "AccessTechnologies", "u", String(accessTechnologies.rawValue),
                "SupportedAssistanceData", "u", String(assistanceData), "AssistanceDataServers", "as",
                String(assistanceServers.count),
            ] + assistanceServers)
        let words = BusctlWords.split(output)
        guard words.count == 2, words[0] == "o" else { throw TestEnvironmentError("AddModem answered \(output)") }
        return words[1]
    }

    /// Removes the modem at `path` (`InterfacesRemoved`).
    public func removeModem(_ path: String) throws {
        _ = try control("RemoveModem", ["o", path])
    }

    /// Moves the modem at `path` to `state`, as ModemManager reports it (`StateChanged` with reason unknown).
    public func setState(_ path: String, _ state: ModemState) throws {
        _ = try control("SetState", ["oiu", path, String(state.rawValue), "0"])
    }

    /// Sets the cell the network serves the modem at `path` from: the operator code (MCC and MNC digits), the
    /// location and tracking area codes and the cell id (0: not reported).
    public func setServingCell(_ path: String, operatorCode: String, lac: UInt32, tac: UInt32, cellID: UInt32) throws {
        _ = try control("SetServingCell", ["osuuu", path, operatorCode, String(lac), String(tac), String(cellID)])
    }

    /// Sets the technologies of the network the modem at `path` is on (shown while it is registered).
    public func setAccessTechnologies(_ path: String, _ technologies: AccessTechnologies) throws {
        _ = try control("SetAccessTechnologies", ["ou", path, String(technologies.rawValue)])
    }

    /// Sets the position of the CDMA base station the modem at `path` is on.
    public func setCDMABaseStation(_ path: String, latitude: Double, longitude: Double) throws {
        _ = try control("SetCdmaBaseStation", ["odd", path, String(latitude), String(longitude)])
    }

    /// Gives the modem at `path` a receiver at `latitude`, `longitude` that streams on its own while a GPS source is
    /// on, an epoch a second, without a position for `coldStart` seconds after it is turned on, or for
    /// `assistedStart` seconds once predicted orbits were injected (the script's `SetReceiver`).
    public func setReceiver(
        _ path: String, latitude: Double, longitude: Double, coldStart: Double, assistedStart: Double
    ) throws {
        _ = try control(
            "SetReceiver",
            ["odddd", path, String(latitude), String(longitude), String(coldStart), String(assistedStart)])
    }

    /// Emits `PropertiesChanged` for `interface` from the modem at `path` exactly as given, values of the wrong
    /// type included (which ModemManager never sends): `changed` is the `a{sv}` in busctl's words, its count first
    /// (`["2", "State", "s", "bogus", "Enabled", "u", "4"]`). The modem's own properties do not change.
    public func emitRawPropertiesChanged(_ path: String, interface: String, changed: [String]) throws {
        _ = try control("EmitRawPropertiesChanged", ["osa{sv}", path, interface] + changed)
    }

    /// Sends `sentences` from the GPS port of the modem at `path`.
    public func pushNMEA(_ path: String, _ sentences: [String]) throws {
        _ = try control("PushNmea", ["os", path, sentences.joined(separator: "\r\n")])
    }

    /// Makes polkit authorise `action` for exactly `users` (root included only if listed).
    public func authorise(_ action: Action, users: [uid_t]) throws {
        _ = try control("SetAuthorisedUsers", ["sau", action.rawValue, String(users.count)] + users.map(String.init))
    }

    /// Makes the next `method` call (`Setup`, `SetGpsRefreshRate` or `GetLocation`) to the modem at `path` fail
    /// with ModemManager's `org.freedesktop.ModemManager1.Error.Core.<error>`; later calls are served as usual.
    public func failNextCall(_ path: String, method: String, error: String = "Failed") throws {
        _ = try control("FailNextCall", ["oss", path, method, error])
    }

    /// Calls `Setup(sources, signalLocation)` on the modem at `path` as root, as another program on the machine
    /// would; the call is recorded among ``setupCalls(_:)``.
    public func setUp(_ path: String, sources: LocationSources, signalLocation: Bool) throws {
        let result = try BusStandIn.busctl(
            bus,
            [
                "call", "--", Self.busName, path, Self.locationInterface, "Setup", "ub", String(sources.rawValue),
                String(signalLocation),
            ])
        guard result.status == 0 else { throw TestEnvironmentError("Setup on \(path) failed: \(result.output)") }
    }

    /// The modem's Location interface as a client reads it now: the sources enabled (`Enabled`) and whether it
    /// publishes its location (`SignalsLocation`).
    public func locationSetup(_ path: String) throws -> (enabled: LocationSources, signalsLocation: Bool) {
        let enabled = BusctlWords.split(try locationProperty(path, "Enabled"))
        let signals = BusctlWords.split(try locationProperty(path, "SignalsLocation"))
        guard enabled.count == 2, enabled[0] == "u", let bits = UInt32(enabled[1]), signals.count == 2,
            signals[0] == "b", let flag = Bool(signals[1])
        else { throw TestEnvironmentError("the Location interface of \(path) reads \(enabled) and \(signals)") }
        return (LocationSources(rawValue: bits), flag)
    }

    /// busctl's answer for the Location interface's property `name` of the modem at `path`.
    private func locationProperty(_ path: String, _ name: String) throws -> String {
        let result = try BusStandIn.busctl(
            bus, ["get-property", "--", Self.busName, path, Self.locationInterface, name])
        guard result.status == 0 else { throw TestEnvironmentError("\(name) of \(path): \(result.output)") }
        return result.output
    }

    /// Every `Setup` call the modem at `path` received, refused ones included, in order.
    public func setupCalls(_ path: String) throws -> [SetupCall] {
        try records(try control("GetSetupCalls", ["o", path]), type: "a(uubs)", fields: 4).map { fields in
            guard let uid = uid_t(fields[0]), let sources = UInt32(fields[1]), let signal = Bool(fields[2]) else {
                throw TestEnvironmentError("GetSetupCalls answered \(fields)")
            }
            return SetupCall(
                uid: uid, sources: LocationSources(rawValue: sources), signalLocation: signal,
                error: fields[3].isEmpty ? nil : fields[3])
        }
    }

    /// Every `SetGpsRefreshRate` call the modem at `path` received, refused ones included, in order.
    public func gpsRefreshRateCalls(_ path: String) throws -> [RefreshRateCall] {
        try records(try control("GetGpsRefreshRateCalls", ["o", path]), type: "a(uus)", fields: 3).map { fields in
            guard let uid = uid_t(fields[0]), let rate = UInt32(fields[1]) else {
                throw TestEnvironmentError("GetGpsRefreshRateCalls answered \(fields)")
            }
            return RefreshRateCall(uid: uid, rate: rate, error: fields[2].isEmpty ? nil : fields[2])
        }
    }

    /// Every `InjectAssistanceData` call the modem at `path` received, refused ones included, in order.
    public func injectedAssistanceData(_ path: String) throws -> [AssistanceCall] {
        let output = try control("GetInjectedAssistanceData", ["o", path])
        let words = BusctlWords.split(output)
        guard words.count >= 2, words[0] == "a(uays)", let count = Int(words[1]) else {
            throw TestEnvironmentError("expected a(uays), got \(output.prefix(200))")
        }
        var calls: [AssistanceCall] = []
        var index = 2
        for _ in 0..<count {
            guard index + 1 < words.count, let uid = uid_t(words[index]), let length = Int(words[index + 1]),
                index + 2 + length < words.count
            else { throw TestEnvironmentError("GetInjectedAssistanceData answered \(output.prefix(200))") }
            let bytes = try words[(index + 2)..<(index + 2 + length)].map { word in
                guard let byte = UInt8(word) else { throw TestEnvironmentError("not a byte: \(word)") }
                return byte
            }
            let error = words[index + 2 + length]
            calls.append(AssistanceCall(uid: uid, data: bytes, error: error.isEmpty ? nil : error))
            index += 3 + length
        }
        return calls
    }

    /// Every `SetSuplServer` call the modem at `path` received, refused ones included, in order.
    public func suplServerCalls(_ path: String) throws -> [AssistanceCall] {
        try records(try control("GetSuplServerCalls", ["o", path]), type: "a(uss)", fields: 3).map { fields in
            guard let uid = uid_t(fields[0]) else {
                throw TestEnvironmentError("GetSuplServerCalls answered \(fields)")
            }
            return AssistanceCall(uid: uid, data: Array(fields[1].utf8), error: fields[2].isEmpty ? nil : fields[2])
        }
    }

    /// The names of the Location interface's methods called on the modem at `path`, in the order received.
    public func callOrder(_ path: String) throws -> [String] {
        let words = BusctlWords.split(try control("GetCallOrder", ["o", path]))
        guard words.count >= 2, words[0] == "as", let count = Int(words[1]), words.count == 2 + count else {
            throw TestEnvironmentError("GetCallOrder answered \(words)")
        }
        return Array(words.dropFirst(2))
    }

    /// The structures of an array answer, `type` then a count, each with `fields` words.
    private func records(_ output: String, type: String, fields: Int) throws -> [[String]] {
        let words = BusctlWords.split(output)
        guard words.count >= 2, words[0] == type, let count = Int(words[1]), words.count == 2 + count * fields else {
            throw TestEnvironmentError("expected \(type), got \(output)")
        }
        return stride(from: 2, to: words.count, by: fields).map { Array(words[$0..<$0 + fields]) }
    }

    /// Calls a control method and returns busctl's answer.
    @discardableResult
    private func control(_ member: String, _ arguments: [String]) throws -> String {
        try standIn.call(Self.controlPath, Self.controlInterface, member, arguments)
    }

    deinit { stop() }
}
