/// One line of a user's history: an app's use, or a request that left the machine because of it.
public enum HistoryEntry: Sendable, Equatable {
    case use(AppUse)
    case lookup(NetworkLookup)

    /// When the entry ends: a use's stop (its start while it goes on), a lookup's answer. The history is kept in
    /// this order, and entries expire by it.
    public var time: WallTime {
        switch self {
        case .use(let use): use.stopped ?? use.started
        case .lookup(let lookup): lookup.time
        }
    }
}
