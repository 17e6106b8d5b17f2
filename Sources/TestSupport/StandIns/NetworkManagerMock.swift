import Foundation
import Glibc
import TestBasics

/// python-dbusmock's NetworkManager template (`python3 -m dbusmock --template networkmanager`) as
/// `org.freedesktop.NetworkManager` on a ``PrivateBus``, for the Wi-Fi tests.
///
/// The template (python3-dbusmock 0.28.7 on Debian 12) has the manager (`GetDevices`, `Devices`), Wi-Fi devices
/// (`AddWiFiDevice`: `DeviceType` 2, `Device.Wireless` with `AccessPoints` and a `RequestScan` that does nothing)
/// and access points (`AddAccessPoint`: `HwAddress`, `Ssid`, `Strength` in percent, `Frequency`, and a fixed
/// `LastSeen` of 1), with `AccessPointAdded` / `AccessPointRemoved`. It has no `LastScan`; ``addLastScan(_:_:)``
/// adds one to a device and ``setLastScan(_:_:)`` changes it with `PropertiesChanged`, as NetworkManager does when
/// a scan finishes. Control calls go through `busctl`.
///
/// The bus must let root own `org.freedesktop.NetworkManager` and everyone call it: create it with
/// `PrivateBus(extraPolicy: NetworkManagerMock.busPolicy)`.
public final class NetworkManagerMock: BusServiceMock, @unchecked Sendable {
    public static let busName = "org.freedesktop.NetworkManager"
    /// The template's main object, which has the control methods.
    static let mainPath = "/org/freedesktop"
    static let mockInterface = "org.freedesktop.DBus.Mock"
    static let wirelessInterface = "org.freedesktop.NetworkManager.Device.Wireless"
    /// `NM_DEVICE_STATE_DISCONNECTED`: a Wi-Fi device that may scan.
    static let disconnected = 30

    /// Bus policy letting the mock own NetworkManager's name and everyone call it, as NetworkManager's does.
    public static let busPolicy = BusStandIn.policy(owning: busName)

    /// The stand-in serving the mock's bus name.
    public let standIn: BusStandIn

    /// Starts the mock and returns once it owns `org.freedesktop.NetworkManager`.
    public init(bus: PrivateBus) throws {
        standIn = try BusStandIn.dbusmock(
            bus: bus, busName: Self.busName, label: "the NetworkManager mock", template: "networkmanager",
            logName: "networkmanager-mock")
    }

    /// Adds a Wi-Fi device `name` (object path `/org/freedesktop/NetworkManager/Devices/NAME`) for interface
    /// `interface`, and returns its path.
    @discardableResult
    public func addWiFiDevice(_ name: String, interface: String) throws -> String {
        try objectPath(try call(Self.mainPath, "AddWiFiDevice", ["ssi", name, interface, String(Self.disconnected)]))
    }

    /// Adds a wired device, which a Wi-Fi scanner must leave alone, and returns its path.
    @discardableResult
    public func addEthernetDevice(_ name: String, interface: String) throws -> String {
        try objectPath(
            try call(Self.mainPath, "AddEthernetDevice", ["ssi", name, interface, String(Self.disconnected)]))
    }

    /// Adds an access point `name` to the device at `device` (`AccessPointAdded`) and returns its path;
    /// `strength` is NetworkManager's percentage.
    @discardableResult
    public func addAccessPoint(
        device: String, name: String, ssid: String, hwAddress: String, frequency: UInt32 = 2412, strength: UInt8
    ) throws -> String {
        // mode 2 (infrastructure), 54 Mb/s, no security.
        try objectPath(
            try call(
                Self.mainPath, "AddAccessPoint",
                ["ssssuuuyu", device, name, ssid, hwAddress, "2", String(frequency), "54000", String(strength), "0"]))
    }

    /// Gives the device at `device` a `LastScan` property (milliseconds of `CLOCK_BOOTTIME`), which the template
    /// lacks.
    public func addLastScan(_ device: String, _ milliseconds: Int64) throws {
        _ = try call(device, "AddProperty", ["ssv", Self.wirelessInterface, "LastScan", "x", String(milliseconds)])
    }

    /// Changes the device's `LastScan`, emitting `PropertiesChanged`, as NetworkManager does after a scan.
    public func setLastScan(_ device: String, _ milliseconds: Int64) throws {
        _ = try call(
            device, "UpdateProperties", ["sa{sv}", Self.wirelessInterface, "1", "LastScan", "x", String(milliseconds)])
    }

    /// Gives NetworkManager's main object the `Metered` property (`NMMetered`: 1 yes, 2 no, 3 guessed yes, 4
    /// guessed no), which the template lacks, or changes it with `PropertiesChanged`.
    public func setMetered(_ value: UInt32) throws {
        let path = "/org/freedesktop/NetworkManager"
        if (try? call(path, "AddProperty", ["ssv", Self.busName, "Metered", "u", String(value)])) == nil {
            _ = try call(path, "UpdateProperties", ["sa{sv}", Self.busName, "1", "Metered", "u", String(value)])
        }
    }

    /// How many times the device at `device` was asked for `RequestScan`.
    public func requestScanCount(_ device: String) throws -> Int {
        let output = try call(device, "GetMethodCalls", ["s", "RequestScan"])
        // "a(tav) N ..."
        let words = output.split(whereSeparator: \.isWhitespace)
        guard words.count >= 2, words[0] == "a(tav)", let count = Int(words[1]) else {
            throw TestEnvironmentError("GetMethodCalls answered \(output)")
        }
        return count
    }

    private func objectPath(_ output: String) throws -> String {
        try BusStandIn.objectPath(output, types: ["s", "o"])
    }

    /// Calls a control method of the mock and returns busctl's answer.
    private func call(_ path: String, _ member: String, _ arguments: [String]) throws -> String {
        try standIn.call(path, Self.mockInterface, member, arguments)
    }

    deinit { stop() }
}
