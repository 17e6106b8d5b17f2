import Foundation
import Glibc
import WhereaboutsCore

/// `wbnet --filters`: what the access point filters cost per scan, in process: ``AccessPointSelection/usable(_:)``
/// and ``AccessPointSelection/movingCount(_:)`` (what the Wi-Fi provider runs on each scan) over scans of 60 access
/// points, with the moving networks left out (`[wifi] ignore-moving-networks=true`, the default) and without
/// (`false`: the checks that ran on each scan before, the locally administered bit aside).
enum ScanFilters {
    /// Scans of 60 access points at a station: 48 fixed networks, 6 of them with locally administered addresses
    /// (routers' second networks), 4 of a train, 4 phones' hotspots, 2 hidden and 2 opted out; signals spread over
    /// −95…−35 dBm and shuffled from scan to scan.
    static func scans(count: Int, seed: UInt64) -> [[AccessPoint]] {
        var random = SeededGenerator(seed: seed)
        let names =
            (0..<48).map { "Station-\($0)" } + ["WIFIonICE", "WIFIonICE", "WIFI@DB", "WIFI@DB"]
            + ["Anna's iPhone", "AndroidAP_3f1a", "Galaxy S23 8d1f", "Pixel_4821", "", "", "cafe_nomap", "x_optout"]
        return (0..<count).map { _ in
            names.enumerated().map { index, name in
                let local = (42..<48).contains(index) || name.hasPrefix("Galaxy") || name.hasPrefix("Pixel")
                let octets: [UInt8] = [local ? 0x06 : 0x00, 0x11, 0x22, 0x33, UInt8(index / 256), UInt8(index % 256)]
                return AccessPoint(
                    bssid: BSSID(octets: octets)!, ssid: Array(name.utf8), signal: -95 + Int(random.next() % 60))
            }.shuffled(using: &random)
        }
    }

    static func run(_ options: BenchOptions) {
        let scans = Self.scans(count: 1000, seed: options.seed)
        let rounds = 50
        print(
            "wbnet --filters: \(scans.count) scans of 60 access points (48 fixed, 6 of them locally administered; 4 of "
                + "a train; 4 hotspots; 2 hidden; 2 opted out), each run \(rounds) times through what the Wi-Fi "
                + "provider runs on a scan (AccessPointSelection.usable and .movingCount), in process, release build")
        for (name, selection) in [
            ("moving networks left out (default)", AccessPointSelection()),
            ("moving networks kept (the checks before)", AccessPointSelection(movingNetworks: nil)),
        ] {
            var kept = 0
            let start = ContinuousClock.now
            for _ in 0..<rounds {
                for scan in scans {
                    kept &+= selection.usable(scan).count &+ selection.movingCount(scan)
                }
            }
            let elapsed = ContinuousClock.now - start
            let nanoseconds =
                (Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9)
                / Double(scans.count * rounds)
            print(
                String(
                    format: "   %@: %.1f µs a scan (%d access points kept of 60)", name, nanoseconds / 1000,
                    selection.usable(scans[0]).count))
            _ = kept
        }
    }
}

/// A seeded xorshift generator, so that the scans are the same from run to run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed | 1 }

    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}
