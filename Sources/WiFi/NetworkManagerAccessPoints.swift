import DBus
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsProviders

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Reading NetworkManager's access points.
extension NetworkManagerScanner {
    /// The access points a device lists now; nil when its `AccessPoints` cannot be read.
    func accessPoints(of device: ObjectPath, owner: String) async -> [AccessPoint]? {
        await daemon.accessPoints(of: device, owner: owner, in: Self.accessPointList) {
            properties throws(PeerFailure) in
            try Self.accessPoint(properties, bootTime: bootTimeSeconds())
        }
    }

    /// The access point that NetworkManager's properties describe, its age measured against `bootTime`
    /// (seconds of `CLOCK_BOOTTIME`); fails when one that is needed is missing or of the wrong type.
    static func accessPoint(_ properties: [String: DBusValue], bootTime: Int64) throws(PeerFailure) -> AccessPoint {
        let address = try properties.required("HwAddress", "s", \.string)
        guard let bssid = BSSID(text: address) else { throw PeerFailure("its HwAddress \"\(address)\" is no BSSID") }
        let ssid = try properties.required("Ssid", "ay", \.bytes)
        let strength = try properties.required("Strength", "y", \.byte)
        let frequency = try properties.ifPresent("Frequency", "u", \.uint32).map(Int.init)
        let seen = try properties.ifPresent("LastSeen", "i", \.int32)
        let age = seen.flatMap { $0 >= 0 ? Duration.seconds(max(0, bootTime - Int64($0))) : nil }
        return AccessPoint(
            bssid: bssid, ssid: ssid, signal: SignalStrength.dBm(fromQuality: Int(strength)), frequency: frequency,
            age: age)
    }
}

/// Seconds since boot on `CLOCK_BOOTTIME`, which counts suspended time too: NetworkManager's `LastSeen` clock.
func bootTimeSeconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_BOOTTIME, &now)
    return Int64(now.tv_sec)
}
