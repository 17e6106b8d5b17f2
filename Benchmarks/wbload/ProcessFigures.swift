import Foundation
import Glibc

/// Memory of a process: resident set and private pages, in KiB.
struct Memory: Sendable {
    /// `VmRSS` from /proc/PID/status.
    var rss: Int
    /// `Private_Clean` + `Private_Dirty` from /proc/PID/smaps_rollup.
    var privateKiB: Int

    static let zero = Memory(rss: 0, privateKiB: 0)
}

/// Figures read from /proc.
enum ProcessFigures {
    /// The memory of `pid` now.
    static func memory(_ pid: pid_t) -> Memory {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let rollup = (try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8)) ?? ""
        return Memory(
            rss: kibibytes(status, "VmRSS:"),
            privateKiB: kibibytes(rollup, "Private_Clean:") + kibibytes(rollup, "Private_Dirty:"))
    }

    /// The most resident memory `pid` has had since it started (`VmHWM` from /proc/PID/status), in KiB.
    static func peakResidentKiB(_ pid: pid_t) -> Int {
        kibibytes((try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? "", "VmHWM:")
    }

    /// The wall clock now, in seconds since the Unix epoch (what bash's `$EPOCHREALTIME` shows).
    static func wallSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    private static func kibibytes(_ text: String, _ key: String) -> Int {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}

/// Order statistics of a sample.
struct Sample: Sendable {
    let values: [Double]

    init(_ values: [Double]) { self.values = values.sorted() }

    /// The `p`-th percentile by the nearest-rank method; NaN when empty.
    func percentile(_ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let rank = Int((p / 100 * Double(values.count)).rounded(.up))
        return values[min(max(rank, 1), values.count) - 1]
    }

    var median: Double { percentile(50) }
}
