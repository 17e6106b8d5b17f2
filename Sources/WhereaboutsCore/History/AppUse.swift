/// One app's use of location, as the history keeps it: from its client's start (or single-shot request) to its
/// stop, disconnection or deletion, or the service's end (`io.github.whereabouts1.Manager.GetHistory`'s uses).
public struct AppUse: Sendable, Equatable {
    /// The app as the service knew it (``ClientApp/description``: `flatpak:ID`, `snap:ID`, `portal:ID` or
    /// `claimed:ID`), at most ``HistoryFile/maximumTextBytes`` bytes.
    public var app: String
    /// When the client began to need fixes.
    public var started: WallTime
    /// When it stopped needing them; nil while the use goes on (only in what is read, never kept).
    public var stopped: WallTime?
    /// The finest level the client was served at during the use.
    public var level: AccuracyLevel
    /// True when the app's fixes were coarsened all along (an approximate grant, or a limit of the
    /// configuration or the user's agent).
    public var approximate: Bool
    /// The kinds of the providers whose fixes the client was given, sorted by name, each once.
    public private(set) var providers: [ProviderKind]

    public init(
        app: String, started: WallTime, stopped: WallTime?, level: AccuracyLevel, approximate: Bool,
        providers: some Sequence<ProviderKind>
    ) {
        self.app = HistoryFile.bounded(app)
        self.started = started
        self.stopped = stopped
        self.level = level
        self.approximate = approximate
        self.providers = Set(providers).sorted { $0.rawValue < $1.rawValue }
    }
}
