import Glibc
import WhereaboutsCore

/// Writes `<N>message` lines to standard error, which journald reads as priority N.
struct JournalLogger: Logger {
    var threshold: LogPriority = .info

    func log(_ priority: LogPriority, _ message: String) {
        guard priority <= threshold else { return }
        let line = Self.line(priority, message)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }

    /// The bytes of one log line: the priority prefix, `message` with each newline and carriage return made a space
    /// (so that a hostile value cannot forge extra log lines; both are single bytes in UTF-8, never part of another
    /// character's), and the line's end.
    private static func line(_ priority: LogPriority, _ message: String) -> [UInt8] {
        var line = Array("<\(priority.rawValue)>".utf8)
        line.reserveCapacity(line.count + message.utf8.count + 1)
        for byte in message.utf8 {
            line.append(byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") ? UInt8(ascii: " ") : byte)
        }
        line.append(UInt8(ascii: "\n"))
        return line
    }
}
