import Synchronization
import WhereaboutsCore

/// A logger that writes nothing, for tests that do not look at the log.
public struct SilentLogger: Logger {
    /// A logger that drops every line.
    public init() {}

    public func log(_ priority: LogPriority, _ message: String) {}
}

/// A logger that keeps its lines, for tests that check what was logged.
public final class LogLines: Logger {
    private let kept = Mutex<[String]>([])

    /// A logger with no lines yet.
    public init() {}

    public func log(_ priority: LogPriority, _ message: String) { kept.withLock { $0.append(message) } }

    /// Every line so far, in order.
    public var lines: [String] { kept.withLock { $0 } }
}
