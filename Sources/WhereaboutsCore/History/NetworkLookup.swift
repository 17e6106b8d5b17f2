/// One request that left the machine for a positioning service, as the history keeps it: what kind of request,
/// to which host, how much it carried and how it ended, and which apps needed it
/// (`io.github.whereabouts1.Manager.GetHistory`'s lookups). Never the access points' or cells' identifiers, nor
/// a position.
public struct NetworkLookup: Sendable, Equatable {
    /// When the answer (or the failure) came.
    public var time: WallTime
    /// What the request was for.
    public var kind: LookupKind
    /// The service's host name, without scheme, credentials, port, path or query (where a key goes), at most
    /// ``HistoryFile/maximumTextBytes`` bytes.
    public var host: String
    /// How many access points it carried.
    public var accessPoints: Int
    /// How many mobile network cells it carried; with no access point and no cell, the request carried only the
    /// machine's IP address (which every request does).
    public var cells: Int
    /// How it ended.
    public var outcome: LookupOutcome
    /// The apps whose use needed the provider that asked (``AppUse/app``), sorted, at most
    /// ``HistoryFile/maximumLookupApps``.
    public private(set) var apps: [String]

    public init(
        time: WallTime, kind: LookupKind, host: String, accessPoints: Int, cells: Int, outcome: LookupOutcome,
        apps: some Sequence<String>
    ) {
        self.time = time
        self.kind = kind
        self.host = HistoryFile.bounded(host)
        self.accessPoints = max(0, accessPoints)
        self.cells = max(0, cells)
        self.outcome = outcome
        self.apps = Array(Set(apps.map(HistoryFile.bounded)).sorted().prefix(HistoryFile.maximumLookupApps))
    }

    /// This lookup naming `apps` instead, for one user's record.
    public func attributed(to apps: some Sequence<String>) -> NetworkLookup {
        NetworkLookup(
            time: time, kind: kind, host: host, accessPoints: accessPoints, cells: cells, outcome: outcome, apps: apps)
    }
}

/// What a request to a positioning service was for.
public enum LookupKind: String, Sendable, CaseIterable {
    /// A Wi-Fi position, its access points and perhaps the serving cells (the Wi-Fi provider).
    case wifi
    /// A position from the serving cells alone (the cell provider).
    case cell
    /// A position from the machine's IP address (the IP provider).
    case ip
    /// A contribution of satellite fixes with the access points and cells seen there (`submit-data=true`).
    case submission
}

/// How a request to a positioning service ended.
public enum LookupOutcome: Sendable, Equatable {
    /// A position with this accuracy, metres at 95%.
    case position(accuracy: Double)
    /// The service did not know the place (HTTP 404).
    case notFound
    /// A contribution the service took.
    case accepted
    /// No usable answer: no connection, a refusal, a server error or a malformed answer.
    case failed

    /// `position`, `not-found`, `accepted` or `failed`.
    public var word: String {
        switch self {
        case .position: "position"
        case .notFound: "not-found"
        case .accepted: "accepted"
        case .failed: "failed"
        }
    }

    /// The accuracy in metres of a position; nil otherwise.
    public var accuracy: Double? {
        if case .position(let accuracy) = self { return accuracy }
        return nil
    }
}

extension LookupKind {
    /// The provider that sends such requests; nil for a contribution, which the Wi-Fi provider sends from
    /// satellite fixes.
    public var provider: ProviderKind? {
        switch self {
        case .wifi: .wifi
        case .cell: .cell
        case .ip: .ip
        case .submission: nil
        }
    }
}
