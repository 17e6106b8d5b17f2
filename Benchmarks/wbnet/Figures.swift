import Foundation
import Glibc
import TestSupport

/// Milliseconds in `nanoseconds`.
func milliseconds(_ nanoseconds: Int64) -> Double { Double(nanoseconds) / 1e6 }

/// Median, 90th percentile and maximum of `values` (milliseconds), with the sample count.
func summary(_ values: [Double]) -> String {
    guard !values.isEmpty else { return "no samples" }
    func format(_ percentile: Double) -> String { String(format: "%.2f", Percentile.of(values, percentile)!) }
    return "p50 \(format(50)) ms, p90 \(format(90)) ms, max \(format(100)) ms (n=\(values.count))"
}

/// `kib` KiB as MiB with one decimal.
func mib(_ kib: Int) -> String { String(format: "%.1f MiB", Double(kib) / 1024) }

/// `VmRSS` and private pages (`Private_Clean` + `Private_Dirty`) of `pid`, in KiB.
func memory(_ pid: pid_t) -> (rss: Int, privateKiB: Int) {
    func kibibytes(_ text: String, _ key: String) -> Int {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let rollup = (try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8)) ?? ""
    return (kibibytes(status, "VmRSS:"), kibibytes(rollup, "Private_Clean:") + kibibytes(rollup, "Private_Dirty:"))
}

/// Whether process `pid` maps the Swift runtime's shared library (a build with the runtime linked in does not).
func mapsSwiftRuntime(_ pid: pid_t) -> Bool {
    ((try? String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)) ?? "").contains("libswiftCore.so")
}
