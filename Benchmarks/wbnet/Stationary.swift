import TestBasics
import TestSupport
import WhereaboutsCore

/// A machine that sits still: `strong` access points whose signals jitter by up to ±`jitter` dBm from scan to
/// scan, and `weak` ones around −88 dBm, each heard in about half the scans.
struct StationaryPlace {
    var strong = 12
    var weak = 10
    var jitter = 8

    /// `count` scans, the same for the same `seed`.
    func scans(_ count: Int, seed: UInt64) -> [[AccessPoint]] {
        var generator = SplitMix64(seed: seed)
        let means = (0..<strong).map { -45 - 3 * $0 }
        return (0..<count).map { _ in
            var scan: [AccessPoint] = []
            for (index, mean) in means.enumerated() {
                let signal = mean + Int.random(in: -jitter...jitter, using: &generator)
                scan.append(AccessPoint(bssid: bssid(index), ssid: Array("net\(index)".utf8), signal: signal))
            }
            for index in 0..<weak where Bool.random(using: &generator) {
                let signal = -84 - Int.random(in: 0...8, using: &generator)
                scan.append(AccessPoint(bssid: bssid(100 + index), ssid: Array("far\(index)".utf8), signal: signal))
            }
            return scan
        }
    }

    /// The address of access point `index` (strong ones from 0, weak ones from 100).
    private func bssid(_ index: Int) -> BSSID {
        BSSID(octets: [0x00, 0x24, 0x01, 0x00, UInt8(index >> 8), UInt8(index & 0xff)])!
    }
}

extension AccessPoint {
    /// This access point as the wpa_supplicant stand-in serves it (`BSSID`, `SSID`, `Signal`).
    var standInBSS: WPASupplicantMock.BSS {
        let octets = (0..<6).map { UInt8((bssid.value >> UInt64(8 * (5 - $0))) & 0xff) }
        return WPASupplicantMock.BSS(bssid: octets, ssid: String(decoding: ssid, as: UTF8.self), signal: Int16(signal))
    }
}
