/// One fact a provider reports about itself in `io.github.whereabouts1.Manager.Providers` (the row's `a{sv}`),
/// such as the outcome of its last lookup.
public enum ProviderDetail: Sendable, Equatable {
    /// A word or short text (`s`).
    case text(String)
    /// A count (`u`).
    case count(UInt32)
    /// A point in wall-clock time (`t`, Unix milliseconds).
    case time(WallTime)
    /// A yes or no (`b`).
    case flag(Bool)
}

/// What `io.github.whereabouts1.Manager.Providers` says of one provider.
public struct ProviderStatus: Sendable, Equatable {
    /// The provider's kind (`gpsd`, `wifi`, `ip`, ...), or `simulation`.
    public var kind: String
    /// The lowest client level that starts it.
    public var level: AccuracyLevel
    /// True while it can deliver.
    public var available: Bool
    /// True while it runs.
    public var running: Bool
    /// Further facts, by name; empty for most providers.
    public var details: [String: ProviderDetail]

    public init(
        kind: String, level: AccuracyLevel, available: Bool, running: Bool, details: [String: ProviderDetail] = [:]
    ) {
        self.kind = kind
        self.level = level
        self.available = available
        self.running = running
        self.details = details
    }
}
