/// Where the service writes its log lines.
///
/// The daemon passes a logger that writes `<N>message` lines to standard error for journald; tests pass one that
/// keeps the lines. Libraries take a logger, they never make one.
public protocol Logger: Sendable {
    /// Writes one line at `priority`.
    func log(_ priority: LogPriority, _ message: String)
}

/// syslog priorities, as journald reads them from a `<N>` prefix.
public enum LogPriority: Int, Sendable, Comparable {
    case error = 3
    case warning = 4
    case notice = 5
    case info = 6
    case debug = 7

    public static func < (lhs: LogPriority, rhs: LogPriority) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension Logger {
    public func error(_ message: String) { log(.error, message) }
    public func warning(_ message: String) { log(.warning, message) }
    public func notice(_ message: String) { log(.notice, message) }
    public func info(_ message: String) { log(.info, message) }
    public func debug(_ message: String) { log(.debug, message) }
}
