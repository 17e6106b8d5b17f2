import Whereabouts

/// How `whereabouts history` prints the record of location use.
extension Format {
    /// One line an entry, uses and lookups together, oldest first by their end, the uses going on last; with
    /// `users`, each line begins with its user's id.
    static func lines(_ history: LocationHistory, users: Bool) -> [String] {
        entries(history).map { entry in
            let user = users ? "\(entry.uid)\t" : ""
            switch entry {
            case .use(let use):
                let stopped = use.stopped.map { isoTime(milliseconds: $0) } ?? "now (going on)"
                let level = use.accuracy.map(levelName) ?? "?"
                let providers = use.providers.isEmpty ? "no fix" : use.providers.joined(separator: ",")
                return "\(user)\(isoTime(milliseconds: use.started)) – \(stopped)\t\(use.app)\t\(level)"
                    + "\(use.approximate ? " (approximate)" : "")\t\(providers)"
            case .lookup(let lookup):
                let outcome = lookup.accuracy.map { "\(lookup.outcome) ±\(fixed($0, 0)) m" } ?? lookup.outcome
                return "\(user)\(isoTime(milliseconds: lookup.time))\tsent to \(lookup.host)\t\(lookup.kind): "
                    + "\(sent(lookup))\t\(outcome)\tfor \(lookup.apps.isEmpty ? "?" : lookup.apps.joined(separator: ","))"
            }
        }
    }

    /// One JSON object an entry, in the order of ``lines(_:users:)``: a use's `type` "use", `uid`, `app`,
    /// `started` and `stopped` in Unix milliseconds (null while it goes on), `level`, `approximate` and
    /// `providers`; a lookup's `type` "lookup", `uid`, `time`, `kind`, `host`, `accessPoints`, `cells`, `outcome`,
    /// `accuracy` (null unless a position) and `apps`.
    static func json(_ history: LocationHistory) -> [String] {
        entries(history).map { entry in
            switch entry {
            case .use(let use):
                object([
                    ("type", string("use")), ("uid", "\(use.uid)"), ("app", string(use.app)),
                    ("started", "\(use.started)"), ("stopped", use.stopped.map { "\($0)" } ?? "null"),
                    ("level", use.accuracy.map { string(levelName($0)) } ?? "null"),
                    ("approximate", "\(use.approximate)"), ("providers", strings(use.providers)),
                ])
            case .lookup(let lookup):
                object([
                    ("type", string("lookup")), ("uid", "\(lookup.uid)"), ("time", "\(lookup.time)"),
                    ("kind", string(lookup.kind)), ("host", string(lookup.host)),
                    ("accessPoints", "\(lookup.accessPoints)"), ("cells", "\(lookup.cells)"),
                    ("outcome", string(lookup.outcome)), ("accuracy", number(lookup.accuracy)),
                    ("apps", strings(lookup.apps)),
                ])
            }
        }
    }

    private enum Entry {
        case use(LocationUse)
        case lookup(LocationLookup)

        var uid: UInt32 {
            switch self {
            case .use(let use): use.uid
            case .lookup(let lookup): lookup.uid
            }
        }

        /// When it ended; a use going on sorts last.
        var end: Int64 {
            switch self {
            case .use(let use): use.stopped ?? .max
            case .lookup(let lookup): lookup.time
            }
        }
    }

    private static func entries(_ history: LocationHistory) -> [Entry] {
        (history.uses.map(Entry.use) + history.lookups.map(Entry.lookup)).enumerated()
            .sorted { ($0.element.end, $0.offset) < ($1.element.end, $1.offset) }.map(\.element)
    }

    /// What a lookup carried, in words.
    private static func sent(_ lookup: LocationLookup) -> String {
        guard lookup.accessPoints > 0 || lookup.cells > 0 else { return "the IP address only" }
        var parts: [String] = []
        if lookup.accessPoints > 0 { parts.append("\(lookup.accessPoints) access point(s)") }
        if lookup.cells > 0 { parts.append("\(lookup.cells) cell(s)") }
        return parts.joined(separator: ", ")
    }

    private static func levelName(_ accuracy: Accuracy) -> String {
        switch accuracy {
        case .country: "country"
        case .city: "city"
        case .neighborhood: "neighborhood"
        case .street: "street"
        case .exact: "exact"
        }
    }

    private static func strings(_ texts: [String]) -> String { "[" + texts.map(string).joined(separator: ",") + "]" }
}
