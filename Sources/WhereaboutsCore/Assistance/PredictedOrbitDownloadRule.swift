/// When a predicted-orbit file may be downloaded for a modem's receiver, which is asked only when an exact client
/// needs that receiver and no valid file is kept: never with network positioning off (`[network] enable=false`),
/// never over a connection NetworkManager calls metered unless `[modem-gps] assistance-metered=true`, and not again
/// within ``retryDelay`` of a download that failed from every server (so a failing server costs one log line an
/// hour, and the receivers start at once meanwhile).
public struct PredictedOrbitDownloadRule: Sendable {
    /// Why a download is not made.
    public enum Refusal: Sendable, Equatable {
        /// `[network] enable=false`.
        case networkPositioningOff
        /// The connection is metered and `assistance-metered=` is false.
        case meteredConnection
        /// The last download for these servers failed less than ``retryDelay`` ago.
        case recentFailure
    }

    /// How long after a failed download the next is made.
    public static let retryDelay = Duration.seconds(3600)

    /// `[network] enable=`.
    public let networkPositioningEnabled: Bool
    /// `[modem-gps] assistance-metered=`.
    public let overMeteredConnection: Bool
    /// When the last download for each list of servers failed.
    private var failures: [[String]: MonotonicTime] = [:]

    /// The rule for the configuration's `[network] enable=` and `[modem-gps] assistance-metered=`.
    public init(networkPositioningEnabled: Bool, overMeteredConnection: Bool) {
        self.networkPositioningEnabled = networkPositioningEnabled
        self.overMeteredConnection = overMeteredConnection
    }

    /// Why no download may be made for `servers` at `now`, before asking whether the connection is metered; nil:
    /// ask it (``refusal(metered:)``).
    public func refusal(for servers: [String], at now: MonotonicTime) -> Refusal? {
        guard networkPositioningEnabled else { return .networkPositioningOff }
        if let failed = failures[servers], now - failed < Self.retryDelay { return .recentFailure }
        return nil
    }

    /// Whether the connection's being metered (as NetworkManager says; false when it cannot tell) refuses a
    /// download; false without asking when `assistance-metered=true`.
    public var asksWhetherMetered: Bool { !overMeteredConnection }

    /// Why no download may be made on a connection that is `metered`; nil: it may.
    public func refusal(metered: Bool) -> Refusal? {
        metered && !overMeteredConnection ? .meteredConnection : nil
    }

    /// Records that a download for `servers` failed from every server at `now`.
    public mutating func failed(_ servers: [String], at now: MonotonicTime) {
        failures = failures.filter { now - $0.value < Self.retryDelay }
        failures[servers] = now
    }

    /// Records that a download for `servers` succeeded.
    public mutating func succeeded(_ servers: [String]) { failures[servers] = nil }
}
