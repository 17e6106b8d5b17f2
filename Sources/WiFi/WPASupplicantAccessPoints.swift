import DBus
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsProviders

/// Reading wpa_supplicant's BSSs as access points.
extension WPASupplicantScanner {
    /// The access points an interface knows now; nil when its `BSSs` cannot be read.
    func accessPoints(of interface: ObjectPath, owner: String) async -> [AccessPoint]? {
        await daemon.accessPoints(of: interface, owner: owner, in: Self.bssList) { properties throws(PeerFailure) in
            try Self.accessPoint(bss: properties)
        }
    }

    /// The access point that a BSS's properties describe; fails when one that is needed is missing, of the
    /// wrong type, or (the BSSID) not six bytes long.
    static func accessPoint(bss properties: [String: DBusValue]) throws(PeerFailure) -> AccessPoint {
        let octets = try properties.required("BSSID", "ay", \.bytes)
        guard let bssid = BSSID(octets: octets) else { throw PeerFailure("its BSSID has \(octets.count) bytes, not 6") }
        let ssid = try properties.required("SSID", "ay", \.bytes)
        let signal = try properties.required("Signal", "n") { if case .int16(let level) = $0 { level } else { nil } }
        let frequency = try properties.ifPresent("Frequency", "q") {
            if case .uint16(let megahertz) = $0 { Int(megahertz) } else { nil }
        }
        let age = try properties.ifPresent("Age", "u", \.uint32).map { Duration.seconds(Int64($0)) }
        return AccessPoint(bssid: bssid, ssid: ssid, signal: Int(signal), frequency: frequency, age: age)
    }
}
