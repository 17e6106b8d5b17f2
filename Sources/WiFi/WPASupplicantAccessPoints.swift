import DBus
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsProviders

/// Reading wpa_supplicant's BSSs as access points.
extension WPASupplicantScanner {
    /// The access points an interface knows now; nil when its `BSSs` cannot be read.
    func accessPoints(of interface: ObjectPath, owner: String) async -> [AccessPoint]? {
        await daemon.accessPoints(
            of: interface, owner: owner, list: "BSSs", interface: Self.interfaceInterface, element: "BSS",
            elements: "BSSs", elementInterface: Self.bssInterface, maximum: Self.maximumBSSs,
            parallelReads: Self.parallelReads,
            parse: { properties throws(PeerFailure) in
                try Self.accessPoint(bss: properties)
            })
    }

    /// The access point that a BSS's properties describe; fails when one that is needed is missing, of the
    /// wrong type, or (the BSSID) not six bytes long.
    static func accessPoint(bss properties: [String: DBusValue]) throws(PeerFailure) -> AccessPoint {
        guard let bssidValue = properties["BSSID"], let octets = bssidValue.bytes else {
            throw PeerFailure("its BSSID is \(properties["BSSID"]?.signature ?? "missing"), not ay")
        }
        guard let bssid = BSSID(octets: octets) else {
            throw PeerFailure("its BSSID has \(octets.count) bytes, not 6")
        }
        guard let ssid = properties["SSID"]?.bytes else {
            throw PeerFailure("its SSID is \(properties["SSID"]?.signature ?? "missing"), not ay")
        }
        guard case .int16(let signal) = properties["Signal"] else {
            throw PeerFailure("its Signal is \(properties["Signal"]?.signature ?? "missing"), not n")
        }
        var frequency: Int?
        if let value = properties["Frequency"] {
            guard case .uint16(let megahertz) = value else {
                throw PeerFailure("its Frequency is \(value.signature), not q")
            }
            frequency = Int(megahertz)
        }
        var age: Duration?
        if let value = properties["Age"] {
            guard case .uint32(let seconds) = value else { throw PeerFailure("its Age is \(value.signature), not u") }
            age = .seconds(Int64(seconds))
        }
        return AccessPoint(bssid: bssid, ssid: ssid, signal: Int(signal), frequency: frequency, age: age)
    }
}
