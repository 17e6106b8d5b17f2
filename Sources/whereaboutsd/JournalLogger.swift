import Glibc
import WhereaboutsCore

/// Writes `<N>message` lines to standard error, which journald reads as priority N.
struct JournalLogger: Logger {
    var threshold: LogPriority = .info

    func log(_ priority: LogPriority, _ message: String) {
        guard priority <= threshold else { return }
        var line = "<\(priority.rawValue)>\(message.replacingNewlines())\n"
        _ = line.withUTF8 { write(2, $0.baseAddress, $0.count) }
    }
}

extension String {
    /// One log line: newlines become spaces, so a hostile value cannot forge extra log lines.
    fileprivate func replacingNewlines() -> String {
        String(unicodeScalars.map { $0 == "\n" || $0 == "\r" ? " " : Character($0) })
    }
}
