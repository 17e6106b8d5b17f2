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

    /// The CPU time `pid` has used, user and system (utime + stime of /proc/PID/stat), in seconds.
    static func cpuSeconds(_ pid: pid_t) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        // Fields after "pid (comm)": state is the first, utime the 12th, stime the 13th.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The CPU time this process has used, user and system, in seconds.
    static func ownCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ value: timeval) -> Double { Double(value.tv_sec) + Double(value.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// The children of this process whose command name is `name`.
    static func children(named name: String) -> [pid_t] {
        let me = getpid()
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { return nil }
            let comm = stat[stat.index(after: open)..<close]
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return comm == name && fields.count > 1 && pid_t(fields[1]) == me ? pid : nil
        }
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
