import DBus
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsProviders

/// Reading NetworkManager's access points.
extension NetworkManagerScanner {
    /// The access points a device lists now; nil when its `AccessPoints` cannot be read.
    func accessPoints(of device: ObjectPath, owner: String) async -> [AccessPoint]? {
        await daemon.accessPoints(
            of: device, owner: owner, list: "AccessPoints", interface: Self.wirelessInterface, element: "access point",
            elements: "access points", elementInterface: Self.accessPointInterface, maximum: Self.maximumAccessPoints,
            parallelReads: Self.parallelReads,
            parse: { properties throws(PeerFailure) in
                try Self.accessPoint(properties, bootTime: bootTimeSeconds())
            })
    }

    /// The access point that NetworkManager's properties describe, its age measured against `bootTime`
    /// (seconds of `CLOCK_BOOTTIME`); fails when one that is needed is missing or of the wrong type.
    static func accessPoint(_ properties: [String: DBusValue], bootTime: Int64) throws(PeerFailure) -> AccessPoint {
        guard let address = properties["HwAddress"]?.string else {
            throw PeerFailure("its HwAddress is \(properties["HwAddress"]?.signature ?? "missing"), not s")
        }
        guard let bssid = BSSID(text: address) else { throw PeerFailure("its HwAddress \"\(address)\" is no BSSID") }
        guard let ssid = properties["Ssid"]?.bytes else {
            throw PeerFailure("its Ssid is \(properties["Ssid"]?.signature ?? "missing"), not ay")
        }
        guard case .byte(let strength) = properties["Strength"] else {
            throw PeerFailure("its Strength is \(properties["Strength"]?.signature ?? "missing"), not y")
        }
        var frequency: Int?
        if let value = properties["Frequency"] {
            guard let megahertz = value.uint32 else { throw PeerFailure("its Frequency is \(value.signature), not u") }
            frequency = Int(megahertz)
        }
        var age: Duration?
        if let value = properties["LastSeen"] {
            guard let seen = value.int32 else { throw PeerFailure("its LastSeen is \(value.signature), not i") }
            if seen >= 0 { age = .seconds(max(0, bootTime - Int64(seen))) }
        }
        return AccessPoint(
            bssid: bssid, ssid: ssid, signal: SignalStrength.dBm(fromQuality: Int(strength)), frequency: frequency,
            age: age)
    }
}
