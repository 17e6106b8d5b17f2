import Foundation
import Glibc

/// What the benchmarks print about the machine they ran on.
public enum Machine {
    /// The installed version of Debian package `name`, from dpkg's status file.
    public static func packageVersion(_ name: String) -> String {
        let status = (try? String(contentsOfFile: "/var/lib/dpkg/status", encoding: .utf8)) ?? ""
        for stanza in status.components(separatedBy: "\n\n") where stanza.hasPrefix("Package: \(name)\n") {
            if let line = stanza.split(separator: "\n").first(where: { $0.hasPrefix("Version: ") }) {
                return String(line.dropFirst("Version: ".count))
            }
        }
        return "(not installed)"
    }

    /// The CPU time `pid` has used, user and system (utime + stime of /proc/PID/stat), in seconds.
    public static func cpuSeconds(_ pid: pid_t) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        // Fields after "pid (comm)": state is the first, utime the 12th, stime the 13th.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The 1-minute load average.
    public static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?"
        return String(text.split(separator: " ").first ?? "?")
    }
}
