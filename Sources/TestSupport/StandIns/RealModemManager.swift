import Foundation
import Glibc
import TestBasics

/// Debian's own ModemManager (1.20) on a ``PrivateBus``, driving the project's emulated Quectel EG25
/// (`Tests/StandIns/emulated_modem.py`) through umockdev: the real plugin manager, port probing, Quectel plugin,
/// 3GPP state machine, Location interface, polkit checks and signals; only the serial ports are emulated.
///
/// It starts python-dbusmock's `polkitd` template as polkit (ModemManager asks polkit on every state-changing and
/// location call and the real polkitd refuses without a login session), with ModemManager's actions allowed, the
/// emulated modem, and `ModemManager --debug` under `libumockdev-preload.so.0`, logging to ``logFile``; it returns
/// once the modem's object exists and, with `enable`, once the modem is registered. The control methods change
/// what the emulated network and receiver report; ModemManager sees them as a real modem's answers.
///
/// The bus must have ModemManager's packaged policy and let polkit's stand-in own its name: create it with
/// `PrivateBus(extraPolicy: try RealModemManager.busPolicy())`. Where a real polkitd is on the bus already (a
/// benchmark of the service as installed), pass `polkitStandIn: false` to both: ModemManager then asks that one.
public final class RealModemManager: @unchecked Sendable {
    public static let busName = "org.freedesktop.ModemManager1"
    public static let managerPath = "/org/freedesktop/ModemManager1"
    /// ModemManager's Location interface.
    public static let locationInterface = "org.freedesktop.ModemManager1.Modem.Location"
    /// The emulated modem.
    public static let script = ProjectPaths.standIns.appendingPathComponent("emulated_modem.py")
    /// ModemManager's packaged bus policy (Debian puts it under /etc).
    public static let policyFile = URL(fileURLWithPath: "/etc/dbus-1/system.d/org.freedesktop.ModemManager1.conf")
    static let program = URL(fileURLWithPath: "/usr/sbin/ModemManager")
    static let polkitName = "org.freedesktop.PolicyKit1"

    /// The polkit actions ModemManager 1.20 checks.
    public static let actions = [
        "org.freedesktop.ModemManager1.Device.Control", "org.freedesktop.ModemManager1.Location",
        "org.freedesktop.ModemManager1.Contacts", "org.freedesktop.ModemManager1.Messaging",
        "org.freedesktop.ModemManager1.Voice", "org.freedesktop.ModemManager1.Firmware",
        "org.freedesktop.ModemManager1.Time", "org.freedesktop.ModemManager1.USSD",
    ]

    /// ModemManager's own policy and, unless `polkitStandIn` is false, the polkit stand-in's, for
    /// `PrivateBus(extraPolicy:)`; throws when ModemManager is not installed.
    public static func busPolicy(polkitStandIn: Bool = true) throws -> String {
        try checkInstalled()
        return "<include>\(policyFile.path)</include>\n" + (polkitStandIn ? BusStandIn.policy(owning: polkitName) : "")
    }

    /// One serving cell: the radio (`gsm`, `umts` or `lte`), the operator code's digits and the area code (LAC for
    /// GSM and UMTS, TAC for LTE) and cell id.
    public struct Cell: Sendable, Equatable {
        public let radio: String
        public let mobileCountryCode: String
        public let mobileNetworkCode: String
        public let areaCode: UInt32
        public let cellID: UInt32

        public init(
            radio: String, mobileCountryCode: String, mobileNetworkCode: String, areaCode: UInt32, cellID: UInt32
        ) {
            self.radio = radio
            self.mobileCountryCode = mobileCountryCode
            self.mobileNetworkCode = mobileNetworkCode
            self.areaCode = areaCode
            self.cellID = cellID
        }
    }

    /// The bus it is on.
    public let bus: PrivateBus
    /// polkit's stand-in; nil when ModemManager asks the polkitd on the bus.
    public let polkit: BusStandIn?
    /// The emulated modem's process.
    public let modem: ChildProcess
    /// ModemManager's process.
    public private(set) var process: ChildProcess
    /// The umockdev testbed's folder.
    private let testbed: String
    /// ModemManager's debug log.
    public var logFile: URL { process.logFile }
    /// The emulated modem's control socket.
    let controlSocket: URL
    /// The modem's object path.
    public private(set) var modemPath = ""

    /// Starts polkit's stand-in allowing ModemManager's ``actions`` but `refused`, the emulated modem (serving
    /// LTE cell 262-01, TAC 3C4D, CI 1A2B3C4, and its receiver at 48.1371, 11.5754), and ModemManager; returns once ModemManager shows the modem and, with `enable`, once it is
    /// enabled and registered.
    public init(bus: PrivateBus, refused: Set<String> = [], enable: Bool = true, polkitStandIn: Bool = true) throws {
        try Self.checkInstalled()
        self.bus = bus
        if polkitStandIn {
            let polkit = try BusStandIn.dbusmock(
                bus: bus, busName: Self.polkitName, label: "the polkit stand-in", template: "polkitd",
                logName: "polkitd-mock")
            try Self.allow(Self.actions.filter { !refused.contains($0) }, polkit: polkit)
            self.polkit = polkit
        } else {
            polkit = nil
        }
        controlSocket = bus.directory.appendingPathComponent("emulated-modem-\(UUID().uuidString.prefix(8))")
        modem = try ChildProcess(
            BusStandIn.python, [Self.script.path, controlSocket.path], environment: bus.environment,
            logFile: bus.directory.appendingPathComponent("emulated-modem-\(UUID().uuidString).log"))
        let modem = self.modem
        let socket = controlSocket
        try Wait.until("the emulated modem's control socket", timeout: 20) {
            guard modem.isRunning else { throw TestEnvironmentError("the emulated modem exited:\n\(modem.log)") }
            return FileManager.default.fileExists(atPath: socket.path)
        }
        testbed = try Self.send(socket, ["dir"], modem: modem)
        process = try Self.startModemManager(on: bus, testbed: testbed)
        try waitForModem()
        if enable { try self.enable() }
    }

    /// Starts ModemManager under umockdev's preload, seeing the testbed at `testbed`.
    private static func startModemManager(on bus: PrivateBus, testbed: String) throws -> ChildProcess {
        var environment = bus.environment
        environment["UMOCKDEV_DIR"] = testbed
        environment["LD_PRELOAD"] = "libumockdev-preload.so.0"
        return try ChildProcess(
            program, ["--debug"], environment: environment,
            logFile: bus.directory.appendingPathComponent("modemmanager-\(UUID().uuidString).log"))
    }

    /// Waits until ModemManager shows a modem, and keeps its path.
    private func waitForModem() throws {
        let process = self.process
        var path = ""
        try Wait.until("ModemManager to show the emulated modem", timeout: 30) {
            guard process.isRunning else { throw TestEnvironmentError("ModemManager exited:\n\(process.log)") }
            let result = try BusStandIn.busctl(
                bus,
                [
                    "call", Self.busName, Self.managerPath, "org.freedesktop.DBus.ObjectManager",
                    "GetManagedObjects",
                ])
            guard result.status == 0, let range = result.output.range(of: "\"\(Self.managerPath)/Modem/") else {
                return false
            }
            path = String(result.output[range].dropFirst()) + result.output[range.upperBound...].prefix { $0 != "\"" }
            return true
        }
        modemPath = path
    }

    /// Throws unless ModemManager, its policy, umockdev's preload and its GObject bindings are installed.
    static func checkInstalled() throws {
        guard FileManager.default.isExecutableFile(atPath: program.path),
            FileManager.default.fileExists(atPath: policyFile.path)
        else { throw TestEnvironmentError("ModemManager is not installed; install modemmanager") }
        let check = try Unprivileged.run(
            [
                BusStandIn.python.path, "-c",
                "import gi; gi.require_version('UMockdev', '1.0'); from gi.repository import UMockdev",
            ], asUser: nil, environment: ProcessInfo.processInfo.environment,
            in: URL(fileURLWithPath: "/"), timeout: 30)
        guard check.status == 0 else {
            throw TestEnvironmentError(
                "umockdev's bindings are missing; install umockdev gir1.2-umockdev-1.0 python3-gi:\n\(check.output)")
        }
    }

    /// Enables the modem, as NetworkManager would, and waits until it is registered.
    public func enable() throws {
        let result = try BusStandIn.busctl(
            bus,
            [
                "call", "--timeout=30", Self.busName, modemPath, "org.freedesktop.ModemManager1.Modem", "Enable", "b",
                "true",
            ])
        guard result.status == 0 else { throw TestEnvironmentError("Enable failed: \(result.output)\n\(log)") }
        try Wait.until("the modem to register", timeout: 20) {
            try modemProperty("State") == "i 8"
        }
    }

    /// busctl's answer for the `org.freedesktop.ModemManager1.Modem` property `name`.
    public func modemProperty(_ name: String, interface: String = "org.freedesktop.ModemManager1.Modem") throws
        -> String
    {
        let result = try BusStandIn.busctl(bus, ["get-property", Self.busName, modemPath, interface, name])
        guard result.status == 0 else { throw TestEnvironmentError("\(name): \(result.output)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Moves the modem to `cell`: a new cell of the same operator and radio at once, another operator or radio
    /// after a second of searching, as a network does.
    public func setCell(_ cell: Cell) throws {
        try control([
            "cell", cell.radio, cell.mobileCountryCode, cell.mobileNetworkCode, String(cell.areaCode, radix: 16),
            String(cell.cellID, radix: 16),
        ])
    }

    /// Loses the network (`false`) or finds it again.
    public func setRegistered(_ registered: Bool) throws {
        try control([registered ? "register" : "unregister"])
    }

    /// Moves the receiver.
    public func move(latitude: Double, longitude: Double) throws {
        try control(["move", String(latitude), String(longitude)])
    }

    /// Streams NMEA while ModemManager has the GPS on (`$GN` or `$GP` talkers), or stops the stream.
    public func setNMEA(_ on: Bool, talker: String = "GN") throws {
        try control(["nmea", on ? "on" : "off", talker])
    }

    /// Adds to each epoch the receiver's sky: a GSA with its dilutions (HDOP 0.9, VDOP 1.5) and a sequence of three
    /// GSV with six satellites in view, with `glonass` also a GLGSV with two GLONASS satellites; or leaves them out.
    public func setSky(_ on: Bool, glonass: Bool = false) throws {
        try control(["sky", on ? "on" : "off"] + (glonass ? ["glonass"] : []))
    }

    /// Streams an epoch every `milliseconds` instead of every second, its time given to the hundredth of a second
    /// when faster (``reset(sources:)`` leaves the rate as it is).
    public func setEpochInterval(milliseconds: Int) throws {
        try control(["rate", String(milliseconds)])
    }

    /// The device leaves, as when unplugged.
    public func remove() throws {
        try control(["remove"])
    }

    /// The AT commands the emulated modem refused so far.
    public func refusedCommands() throws -> [String] {
        try control(["refused"]).split(separator: ",").map(String.init)
    }

    /// The device comes back after ``remove()``; returns once ModemManager shows it, enabled and registered.
    public func add() throws {
        try control(["add"])
        try waitForModem()
        try enable()
    }

    /// Stops ModemManager, leaving the emulated modem; ``start()`` starts it again.
    public func stopModemManager() {
        process.stop(grace: 10)
    }

    /// Starts ModemManager after ``stopModemManager()``; returns once it shows the modem, enabled and registered.
    public func start() throws {
        process = try Self.startModemManager(on: bus, testbed: testbed)
        try waitForModem()
        try enable()
    }

    /// Makes polkit's stand-in answer yes to ModemManager's ``actions`` but `refused`, from the next check on.
    public func refuse(_ refused: Set<String>) throws {
        guard let polkit else { throw TestEnvironmentError("ModemManager asks the bus's own polkitd") }
        try Self.allow(Self.actions.filter { !refused.contains($0) }, polkit: polkit)
    }

    private static func allow(_ actions: [String], polkit: BusStandIn) throws {
        try polkit.call(
            "/org/freedesktop/PolicyKit1/Authority", "org.freedesktop.DBus.Mock", "SetAllowed",
            ["as", String(actions.count)] + actions)
    }

    /// The emulated network, receiver and polkit's answers as they were at the start, the device plugged in,
    /// ModemManager running and its location sources set up as `sources` (its `MMModemLocationSource` bits) with
    /// signals off and the GPS refresh rate at ModemManager's default of 30 s: what a test that shares this
    /// ModemManager finds, whatever the test before it left.
    public func reset(sources: UInt32) throws {
        let answer = try control(["reset"])
        if !process.isRunning {
            try start()
        } else if answer == "plugged" {
            try waitForModem()
            try enable()
        } else if answer == "searching" {
            try Wait.until("the modem to search", timeout: 20) { try modemProperty("State") != "i 8" }
        }
        try refuse([])
        if try modemProperty("State") == "i 3" { try enable() }
        try Wait.until("the modem back on its first cell", timeout: 20) {
            try modemProperty("State") == "i 8"
                && modemProperty("OperatorCode", interface: "org.freedesktop.ModemManager1.Modem.Modem3gpp")
                    == "s \"26201\""
        }
        try setUpLocation(sources: sources, signals: false)
        try setGpsRefreshRate(30)
    }

    /// Calls `SetGpsRefreshRate` on the modem's Location interface.
    public func setGpsRefreshRate(_ seconds: UInt32) throws {
        try location("SetGpsRefreshRate", ["u", String(seconds)])
    }

    /// Calls `Setup` on the modem's Location interface, as another program on the machine would.
    public func setUpLocation(sources: UInt32, signals: Bool) throws {
        try location("Setup", ["ub", String(sources), String(signals)])
    }

    /// The location sources enabled (`Enabled`, `MMModemLocationSource` bits) and whether `Location` is signalled.
    public func locationSetup() throws -> (enabled: UInt32, signals: Bool) {
        let interface = Self.locationInterface
        let enabled = try modemProperty("Enabled", interface: interface)
        let signals = try modemProperty("SignalsLocation", interface: interface)
        guard enabled.hasPrefix("u "), let bits = UInt32(enabled.dropFirst(2)) else {
            throw TestEnvironmentError("Enabled: \(enabled)")
        }
        return (bits, signals == "b true")
    }

    /// The GPS refresh rate in seconds (`GpsRefreshRate`).
    public func gpsRefreshRate() throws -> UInt32 {
        let rate = try modemProperty("GpsRefreshRate", interface: Self.locationInterface)
        guard rate.hasPrefix("u "), let seconds = UInt32(rate.dropFirst(2)) else {
            throw TestEnvironmentError("GpsRefreshRate: \(rate)")
        }
        return seconds
    }

    /// Whether the emulated receiver is on (`AT+QGPS=1` without `AT+QGPSEND` since), and how often it was turned on.
    public func receiver() throws -> (on: Bool, starts: Int) {
        let words = try control(["gps"]).split(separator: " ")
        guard words.count == 2, let starts = Int(words[1]) else { throw TestEnvironmentError("gps: \(words)") }
        return (words[0] == "on", starts)
    }

    private func location(_ method: String, _ arguments: [String]) throws {
        let result = try BusStandIn.busctl(
            bus, ["call", "--timeout=30", Self.busName, modemPath, Self.locationInterface, method] + arguments)
        guard result.status == 0 else { throw TestEnvironmentError("\(method): \(result.output)\n\(log)") }
    }

    /// What ModemManager and the emulated modem wrote, for a failure's message.
    public var log: String {
        "ModemManager:\n\(process.log.suffix(20000))\nthe emulated modem:\n\(modem.log.suffix(8000))"
    }

    @discardableResult
    private func control(_ words: [String]) throws -> String {
        try Self.send(controlSocket, words, modem: modem)
    }

    /// Sends a command to the emulated modem and returns its answer after `ok`.
    private static func send(_ socket: URL, _ words: [String], modem: ChildProcess) throws -> String {
        let result = try Unprivileged.run(
            [BusStandIn.python.path, script.path, "--send", socket.path] + words, asUser: nil,
            environment: ProcessInfo.processInfo.environment, in: URL(fileURLWithPath: "/"), timeout: 20)
        let answer = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.status == 0, answer.hasPrefix("ok") else {
            throw TestEnvironmentError("the emulated modem answered \(words) with \(answer)\n\(modem.log)")
        }
        return String(answer.dropFirst(2)).trimmingCharacters(in: .whitespaces)
    }

    /// Stops ModemManager (which disables the modem over AT, so the emulated modem goes on answering meanwhile),
    /// then the emulated modem and polkit's stand-in.
    public func stop() {
        process.stop(grace: 10)
        modem.stop(grace: 2)
        polkit?.stop()
    }

    deinit { stop() }
}
