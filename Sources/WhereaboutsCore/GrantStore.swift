/// The users' decisions about apps, as kept in `/var/lib/whereabouts/grants`.
///
/// The file is text, one decision a line after a version header:
///
///     # whereabouts grants 1
///     1000	org.example.Maps	always	precise
///     1000	org.example.Weather	when-in-use	approximate
///     1001	org.example.Tracker	denied	-
///
/// Fields are separated by one tab: the user id, the desktop id, the decision and the precision. Any other line,
/// a wrong header, a duplicate (user, app) pair or a bad field makes the whole file corrupt; the service then moves
/// it aside and fails closed (every app `notDetermined`).
public struct GrantStore: Sendable, Equatable {
    /// The first line of every grants file.
    public static let header = "# whereabouts grants 1"

    /// One user's decision about one app.
    public struct Key: Hashable, Sendable, Comparable {
        public var uid: UInt32
        public var app: String
        public init(uid: UInt32, app: String) {
            self.uid = uid
            self.app = app
        }
        public static func < (lhs: Key, rhs: Key) -> Bool { (lhs.uid, lhs.app) < (rhs.uid, rhs.app) }
    }

    /// The decisions.
    public private(set) var decisions: [Key: StoredDecision] = [:]

    public init() {}

    /// The decision of `uid` about `app`.
    public func decision(uid: UInt32, app: String) -> StoredDecision? { decisions[Key(uid: uid, app: app)] }

    /// Records a decision; nil forgets it (a revoked grant).
    public mutating func set(_ decision: StoredDecision?, uid: UInt32, app: String) {
        decisions[Key(uid: uid, app: app)] = decision
    }

    /// The file's text, sorted by user and app.
    public var text: String {
        var lines = [GrantStore.header]
        for key in decisions.keys.sorted() {
            let fields: (String, String) =
                switch decisions[key]! {
                case .granted(let kind, let approximate): (kind.rawValue, approximate ? "approximate" : "precise")
                case .denied: ("denied", "-")
                }
            lines.append("\(key.uid)\t\(key.app)\t\(fields.0)\t\(fields.1)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Parses a grants file; `file` names it in errors.
    public static func parse(_ text: String, file: String) throws(GrantStoreError) -> GrantStore {
        var store = GrantStore()
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
        guard lines.first == Substring(header) else {
            throw GrantStoreError(file: file, line: 1, reason: "the first line is not \"\(header)\"")
        }
        for (offset, line) in lines.enumerated().dropFirst() {
            let number = offset + 1
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 4 else {
                throw GrantStoreError(file: file, line: number, reason: "expected 4 tab-separated fields, found \(fields.count)")
            }
            guard let uid = UInt32(fields[0]) else {
                throw GrantStoreError(file: file, line: number, reason: "'\(fields[0].prefix(40))' is not a user id")
            }
            let app = String(fields[1])
            guard !app.isEmpty, app.utf8.count <= 255, !app.contains(where: { $0.isNewline || $0 == "\t" }) else {
                throw GrantStoreError(file: file, line: number, reason: "bad desktop id")
            }
            let decision: StoredDecision
            switch (fields[2], fields[3]) {
            case ("denied", "-"): decision = .denied
            case (let kind, "precise"), (let kind, "approximate"):
                guard let grant = GrantKind(rawValue: String(kind)) else {
                    throw GrantStoreError(file: file, line: number, reason: "unknown decision '\(kind.prefix(40))'")
                }
                decision = .granted(grant, approximate: fields[3] == "approximate")
            default:
                throw GrantStoreError(file: file, line: number, reason: "unknown decision '\(fields[2].prefix(40)) \(fields[3].prefix(40))'")
            }
            let key = Key(uid: uid, app: app)
            guard store.decisions[key] == nil else {
                throw GrantStoreError(file: file, line: number, reason: "a second decision of user \(uid) about \(app)")
            }
            store.decisions[key] = decision
        }
        return store
    }
}

/// A grants file that cannot be read.
public struct GrantStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var reason: String
    public var description: String { "\(file):\(line): \(reason)" }
}
