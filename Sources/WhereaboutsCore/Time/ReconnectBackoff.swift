/// The pauses before a stream that ended or failed is opened again: ``firstDelay`` (0.25 s) after the first
/// failure, twice the one before after each further failure in a row, at most ``maximumDelay`` (8 s); a
/// connection that proved good (``succeeded()``) starts the series over.
///
/// The NMEA and gpsd streams follow it: a receiver unplugged for a moment or a gpsd restarted is back within a
/// quarter of a second, while one gone for good costs an attempt every 8 s. The rule has no randomness: each
/// stream has a source of its own, so there is no crowd of clients to spread out.
public struct ReconnectBackoff: Sendable, Equatable {
    /// The pause after the first failure in a row.
    public static let firstDelay: Duration = .milliseconds(250)
    /// The longest pause.
    public static let maximumDelay: Duration = .seconds(8)

    /// The pause the next failure calls for.
    public private(set) var nextDelay = ReconnectBackoff.firstDelay

    /// No failure yet.
    public init() {}

    /// Records a failure; returns the pause before the next attempt.
    public mutating func failed() -> Duration {
        let delay = nextDelay
        nextDelay = min(delay * 2, ReconnectBackoff.maximumDelay)
        return delay
    }

    /// Records a connection that proved good: the next failure pauses ``firstDelay`` again.
    public mutating func succeeded() { nextDelay = ReconnectBackoff.firstDelay }
}
