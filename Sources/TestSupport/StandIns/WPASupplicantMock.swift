import Foundation
import Glibc
import TestBasics

/// A stand-in for wpa_supplicant on a ``PrivateBus``: python-dbusmock loading the project's template
/// `Tests/StandIns/wpa_supplicant_mock.py` (python-dbusmock has none for wpa_supplicant), as `fi.w1.wpa_supplicant1`.
///
/// The template serves the root object (`Interfaces`, `CreateInterface`, `RemoveInterface`, `GetInterface`,
/// `InterfaceAdded`, `InterfaceRemoved`), interface objects (`Ifname`, `State`, `Scanning`, `BSSs`, `Scan`, which
/// emits `BSSAdded` / `BSSRemoved` and then `ScanDone(true)` after a short delay, and refuses with
/// `fi.w1.wpa_supplicant1.Interface.ScanError` while a scan runs) and BSS objects. This wrapper drives its
/// control methods (`org.freedesktop.DBus.Mock` on the root object) with `busctl`; interfaces are named by their
/// interface name (`wlan0`), which `GetInterface` turns into the object path.
///
/// The bus must let root own `fi.w1.wpa_supplicant1` and everyone call it: create it with
/// `PrivateBus(extraPolicy: WPASupplicantMock.busPolicy)`.
public final class WPASupplicantMock: BusServiceMock, @unchecked Sendable {
    /// Debian's Python (``BusStandIn/python``).
    public static let python = BusStandIn.python
    public static let busName = "fi.w1.wpa_supplicant1"
    public static let rootPath = "/fi/w1/wpa_supplicant1"
    /// The python-dbusmock template.
    public static let template = ProjectPaths.standIns.appendingPathComponent("wpa_supplicant_mock.py")
    static let rootInterface = "fi.w1.wpa_supplicant1"
    static let mockInterface = "org.freedesktop.DBus.Mock"

    /// Bus policy letting the mock own wpa_supplicant's name and everyone call it.
    public static let busPolicy = BusStandIn.policy(owning: busName)

    /// One BSS a scan finds: its properties as wpa_supplicant's `fi.w1.wpa_supplicant1.BSS` has them, or
    /// deliberately not (any property can be replaced with a value of another type, or removed).
    public struct BSS: Sendable {
        /// A property value, with its D-Bus type.
        public enum Value: Sendable {
            case bytes([UInt8])
            case int16(Int16)
            case uint16(UInt16)
            case uint32(UInt32)
            case string(String)
        }

        public var properties: [String: Value]

        /// A well-formed BSS: `BSSID ay`, `SSID ay`, `Signal n` (dBm), `Frequency q` (MHz), `Age u` (seconds).
        public init(bssid: [UInt8], ssid: String, signal: Int16, frequency: UInt16 = 2412, age: UInt32 = 0) {
            properties = [
                "BSSID": .bytes(bssid), "SSID": .bytes(Array(ssid.utf8)), "Signal": .int16(signal),
                "Frequency": .uint16(frequency), "Age": .uint32(age),
            ]
        }

        /// This BSS with property `name` set to `value` (nil removes it).
        public func with(_ name: String, _ value: Value?) -> BSS {
            var copy = self
            copy.properties[name] = value
            return copy
        }

        /// The `a{sv}` as busctl arguments.
        var busctlArguments: [String] {
            var arguments = [String(properties.count)]
            for (name, value) in properties.sorted(by: { $0.key < $1.key }) {
                arguments.append(name)
                switch value {
                case .bytes(let bytes): arguments += ["ay", String(bytes.count)] + bytes.map(String.init)
                case .int16(let number): arguments += ["n", String(number)]
                case .uint16(let number): arguments += ["q", String(number)]
                case .uint32(let number): arguments += ["u", String(number)]
                case .string(let text): arguments += ["s", text]
                }
            }
            return arguments
        }
    }

    /// The stand-in serving the mock's bus name.
    public let standIn: BusStandIn

    /// Starts the mock with wireless interfaces named `interfaces`, whose scans take `scanDelay` milliseconds,
    /// and returns once it owns `fi.w1.wpa_supplicant1`.
    public init(bus: PrivateBus, interfaces: [String] = ["wlan0"], scanDelay: Int = 100) throws {
        let names = interfaces.map { "\"\($0)\"" }.joined(separator: ", ")
        let parameters = "{\"Interfaces\": [\(names)], \"ScanDelay\": \(scanDelay)}"
        standIn = try BusStandIn.dbusmock(
            bus: bus, busName: Self.busName, label: "the wpa_supplicant mock", template: Self.template.path,
            parameters: parameters, logName: "wpa_supplicant-mock")
    }

    /// The object path of the interface named `ifname`, from wpa_supplicant's own `GetInterface`.
    public func path(of ifname: String) throws -> String {
        try BusStandIn.objectPath(try standIn.call(Self.rootPath, Self.rootInterface, "GetInterface", ["s", ifname]))
    }

    /// Adds a wireless interface (`InterfaceAdded`) and returns its object path.
    @discardableResult
    public func addInterface(_ ifname: String) throws -> String {
        try BusStandIn.objectPath(try standIn.call(Self.rootPath, Self.mockInterface, "AddInterface", ["s", ifname]))
    }

    /// Removes a wireless interface (`InterfaceRemoved`).
    public func removeInterface(_ ifname: String) throws {
        try standIn.call(Self.rootPath, Self.mockInterface, "RemoveInterfaceByName", ["s", ifname])
    }

    /// Sets what scans on `ifname` find from now on.
    public func setScanResults(_ ifname: String, _ bsses: [BSS]) throws {
        let entries = bsses.flatMap(\.busctlArguments)
        try standIn.call(
            Self.rootPath, Self.mockInterface, "SetScanResults",
            ["oaa{sv}", try path(of: ifname), String(bsses.count)] + entries)
    }

    /// How many `Scan` calls `ifname` received, refused ones included.
    public func scanCount(_ ifname: String) throws -> Int {
        let output = try standIn.call(Self.rootPath, Self.mockInterface, "GetScanCount", ["o", try path(of: ifname)])
        let words = output.split(whereSeparator: \.isWhitespace)
        guard words.count == 2, words[0] == "u", let count = Int(words[1]) else {
            throw TestEnvironmentError("GetScanCount answered \(output)")
        }
        return count
    }

    /// Holds `ifname` in a scan of its own that never ends, so that `Scan` is refused, or lets it go.
    public func setBusy(_ ifname: String, _ busy: Bool) throws {
        try standIn.call(Self.rootPath, Self.mockInterface, "SetBusy", ["ob", try path(of: ifname), String(busy)])
    }

    /// Makes the scans on `ifname` take `milliseconds`.
    public func setScanDelay(_ ifname: String, milliseconds: Int) throws {
        try standIn.call(
            Self.rootPath, Self.mockInterface, "SetScanDelay", ["ou", try path(of: ifname), String(milliseconds)])
    }

    /// Asks `ifname` for a scan as another client would (`Scan({"Type": <"active">})`).
    public func scan(_ ifname: String) throws {
        try standIn.call(
            try path(of: ifname), "fi.w1.wpa_supplicant1.Interface", "Scan", ["a{sv}", "1", "Type", "s", "active"])
    }

    /// Makes `fi.w1.wpa_supplicant1` activatable on `bus`, as on Debian, by a script that only creates `marker`:
    /// the marker's existence tells that something called wpa_supplicant by name while nobody owned it.
    public static func makeActivatable(on bus: PrivateBus, marker: URL) throws {
        let script = bus.directory.appendingPathComponent("activate-wpa_supplicant.sh")
        try "#!/bin/sh\ntouch '\(marker.path)'\n".write(to: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        let service = "[D-BUS Service]\nName=\(busName)\nExec=\(script.path)\n"
        try service.write(
            to: bus.serviceDirectory.appendingPathComponent("\(busName).service"), atomically: true, encoding: .utf8)
    }

    /// Runs `busctl --address=BUS ARGUMENTS` (``BusStandIn/busctl(_:_:)``).
    public static func busctl(_ bus: PrivateBus, _ arguments: [String]) throws -> CommandResult {
        try BusStandIn.busctl(bus, arguments)
    }

    deinit { stop() }
}
