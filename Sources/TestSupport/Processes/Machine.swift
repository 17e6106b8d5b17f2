import Foundation

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

    /// The 1-minute load average.
    public static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?"
        return String(text.split(separator: " ").first ?? "?")
    }
}
