/// The users' decisions about apps, as kept in `/var/lib/whereabouts/grants`.
///
/// The file is text, one decision a line after a version header:
///
///     # whereabouts grants 2
///     1000	org.example.Maps	always	precise	verified
///     1000	org.example.Weather	when-in-use	approximate
///     1001	org.example.Tracker	denied	-
///
/// Fields are separated by one tab: the user id, the app id, the decision, the precision, and `verified` for a
/// decision about an app the system vouched for (a Flatpak or Snap app, or the desktop portal's app); a decision
/// without it is about an id that the caller only claimed. A user may hold both for one app id: a verified
/// decision serves only verified callers, a claimed one anyone claiming the id (``decision(uid:app:verified:)``).
/// Version 1 files, written before identities were verified, are the same but for the header and the verified
/// decisions, so a version 1 file is rewritten at its own size.
///
/// Any other line, a wrong header, a duplicate (user, app, verified) triple or a bad field makes the whole file
/// corrupt; the service then moves it aside and fails closed (every app `notDetermined`).
///
/// The store is bounded so that the file never grows past what is read back: at most ``maximumDecisionsPerUser``
/// decisions per user, ``maximumDecisions`` in all, ``maximumTextSize`` bytes, and only app ids the file can hold
/// (``set(_:uid:app:verified:)`` refuses the rest, saying why). One user filling their share leaves the others'
/// untouched.
public struct GrantStore: Sendable, Equatable {
    /// The first line of every grants file.
    public static let header = "# whereabouts grants 2"
    /// The first line of a file written before identities were verified, whose decisions are all claimed.
    static let claimedOnlyHeader = "# whereabouts grants 1"
    /// The most decisions one user may have (a verified and a claimed one about an app count as two); one more is
    /// refused.
    public static let maximumDecisionsPerUser = 1000
    /// The most decisions of all users together.
    public static let maximumDecisions = 50_000
    /// The largest grants file read, and so the largest text ever written: ``maximumDecisions`` of the longest
    /// lines fit with room (50,000 × 300 bytes is 15 MB), and a store read from an older, fuller file cannot
    /// grow past it.
    public static let maximumTextSize = 16 << 20

    /// One user's decision about one app, verified or claimed.
    public struct Key: Hashable, Sendable, Comparable {
        /// The user who decided.
        public var uid: UInt32
        /// The app id decided about.
        public var app: String
        /// True for a decision about an app the system vouched for, which no mere claim of its id may use.
        public var verified: Bool
        /// The key of `uid`'s decision about `app`, verified or claimed.
        public init(uid: UInt32, app: String, verified: Bool = false) {
            self.uid = uid
            self.app = app
            self.verified = verified
        }
        /// By user, app, then the claimed decision before the verified one.
        public static func < (lhs: Key, rhs: Key) -> Bool {
            (lhs.uid, lhs.app, lhs.verified ? 1 : 0) < (rhs.uid, rhs.app, rhs.verified ? 1 : 0)
        }
    }

    /// The decisions.
    public private(set) var decisions: [Key: StoredDecision] = [:]
    /// How many decisions each user has.
    private var decisionsByUser: [UInt32: Int] = [:]
    /// The length of ``text`` in bytes.
    public private(set) var textSize = GrantStore.header.utf8.count + 1

    public init() {}

    /// The decision of `uid` that applies to a caller of `app`: for a `verified` caller, the verified decision
    /// if there is one and the claimed one otherwise; for a caller who only claims the id, the claimed one alone.
    public func decision(uid: UInt32, app: String, verified: Bool = false) -> StoredDecision? {
        if verified, let decision = decisions[Key(uid: uid, app: app, verified: true)] { return decision }
        return decisions[Key(uid: uid, app: app)]
    }

    /// The keys of `uid`'s decisions about `app`, claimed and verified.
    public func keys(uid: UInt32, app: String) -> [Key] {
        [Key(uid: uid, app: app), Key(uid: uid, app: app, verified: true)].filter { decisions[$0] != nil }
    }

    /// Why `decision` of `uid` about `app` (verified or claimed) cannot be stored, or nil when it can: a desktop
    /// id the file cannot hold, a user at ``maximumDecisionsPerUser`` or the store at ``maximumDecisions`` (for a
    /// key not yet decided about), or a text that would pass ``maximumTextSize``. Forgetting a decision and
    /// changing an existing one within the size are always possible.
    public func refusal(of decision: StoredDecision?, uid: UInt32, app: String, verified: Bool = false)
        -> GrantStoreLimit?
    {
        guard let decision else { return nil }
        guard GrantStore.isStorable(app) else { return .unstorableApp }
        let key = Key(uid: uid, app: app, verified: verified)
        let old = decisions[key]
        if old == nil {
            let count = decisionsByUser[uid] ?? 0
            if count >= GrantStore.maximumDecisionsPerUser { return .user(uid: uid, decisions: count) }
            if decisions.count >= GrantStore.maximumDecisions { return .store(decisions: decisions.count) }
        }
        let size =
            textSize - (old.map { GrantStore.line(key, $0).utf8.count + 1 } ?? 0)
            + GrantStore.line(key, decision).utf8.count + 1
        return size > GrantStore.maximumTextSize ? .size(bytes: size) : nil
    }

    /// Records a decision, verified or claimed, unless ``refusal(of:uid:app:verified:)`` says why it cannot be,
    /// which is then returned and nothing changes; nil forgets the decision (a revoked grant).
    @discardableResult
    public mutating func set(_ decision: StoredDecision?, uid: UInt32, app: String, verified: Bool = false)
        -> GrantStoreLimit?
    {
        if let refusal = refusal(of: decision, uid: uid, app: app, verified: verified) { return refusal }
        let key = Key(uid: uid, app: app, verified: verified)
        if let old = decisions.removeValue(forKey: key) {
            textSize -= GrantStore.line(key, old).utf8.count + 1
            decisionsByUser[uid]! -= 1
            if decisionsByUser[uid] == 0 { decisionsByUser[uid] = nil }
        }
        if let decision { insert(decision, for: key) }
        return nil
    }

    /// Adds the decision of a key that has none, keeping the counts.
    private mutating func insert(_ decision: StoredDecision, for key: Key) {
        decisions[key] = decision
        textSize += GrantStore.line(key, decision).utf8.count + 1
        decisionsByUser[key.uid, default: 0] += 1
    }

    /// True for a desktop id that the file can hold and ``parse(_:file:)`` reads back: 1 to 255 bytes without
    /// control characters (tabs and line ends among them) or other line separators.
    static func isStorable(_ app: String) -> Bool {
        !app.isEmpty && app.utf8.count <= 255
            && !app.unicodeScalars.contains {
                $0.properties.generalCategory == .control || $0 == "\u{2028}" || $0 == "\u{2029}"
            }
    }

    /// The line of the file that holds `decision` of `key`, without its line end.
    private static func line(_ key: Key, _ decision: StoredDecision) -> String {
        let fields: (String, String) =
            switch decision {
            case .granted(let kind, let approximate): (kind.rawValue, approximate ? "approximate" : "precise")
            case .denied: ("denied", "-")
            }
        return "\(key.uid)\t\(key.app)\t\(fields.0)\t\(fields.1)\(key.verified ? "\tverified" : "")"
    }

    /// The file's text, sorted by user and app; ``textSize`` bytes long.
    public var text: String {
        var lines = [GrantStore.header]
        for key in decisions.keys.sorted() { lines.append(GrantStore.line(key, decisions[key]!)) }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Parses a grants file; `file` names it in errors.
    ///
    /// A file written before the limits existed may hold more decisions than they allow: it is read whole, and
    /// only new decisions are refused. Lines and fields are split at their bytes, so no character (`\r\n` is one)
    /// can join two lines.
    public static func parse(_ text: String, file: String) throws(GrantStoreError) -> GrantStore {
        var store = GrantStore()
        var lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        guard let first = lines.first, Substring(first) == Substring(header) || Substring(first) == claimedOnlyHeader
        else {
            throw GrantStoreError(file: file, line: 1, reason: "the first line is not \"\(header)\"")
        }
        let mayBeVerified = Substring(first) == Substring(header)
        for (offset, line) in lines.enumerated().dropFirst() {
            let number = offset + 1
            let fields = line.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false).map(Substring.init)
            guard fields.count == 4 || (mayBeVerified && fields.count == 5) else {
                throw GrantStoreError(
                    file: file, line: number,
                    reason: "expected \(mayBeVerified ? "4 or 5" : "4") tab-separated fields, found \(fields.count)")
            }
            let verified = fields.count == 5
            guard !verified || fields[4] == "verified" else {
                throw GrantStoreError(file: file, line: number, reason: "'\(fields[4].prefix(40))' is not 'verified'")
            }
            guard let uid = UInt32(fields[0]) else {
                throw GrantStoreError(file: file, line: number, reason: "'\(fields[0].prefix(40))' is not a user id")
            }
            let app = String(fields[1])
            guard !app.isEmpty, app.utf8.count <= 255, !app.contains(where: \.isNewline) else {
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
                throw GrantStoreError(
                    file: file, line: number,
                    reason: "unknown decision '\(fields[2].prefix(40)) \(fields[3].prefix(40))'")
            }
            let key = Key(uid: uid, app: app, verified: verified)
            guard store.decisions[key] == nil else {
                throw GrantStoreError(
                    file: file, line: number,
                    reason: "a second \(verified ? "verified" : "claimed") decision of user \(uid) about \(app)")
            }
            store.insert(decision, for: key)
        }
        return store
    }
}

/// Why a decision cannot be stored (``GrantStore/refusal(of:uid:app:verified:)``).
public enum GrantStoreLimit: Error, Sendable, Equatable, CustomStringConvertible {
    /// The desktop id is empty, longer than 255 bytes or holds a control character or a line separator.
    case unstorableApp
    /// The user has ``GrantStore/maximumDecisionsPerUser`` decisions already.
    case user(uid: UInt32, decisions: Int)
    /// The store holds ``GrantStore/maximumDecisions`` already.
    case store(decisions: Int)
    /// The file would pass ``GrantStore/maximumTextSize``.
    case size(bytes: Int)

    public var description: String {
        switch self {
        case .unstorableApp:
            "the desktop id cannot be stored: it is empty, longer than 255 bytes, or holds a control character"
        case .user(let uid, let decisions):
            "user \(uid) has stored \(decisions) decisions, the most one user may have "
                + "(\(GrantStore.maximumDecisionsPerUser)); revoke some first"
        case .store(let decisions):
            "the service holds \(decisions) stored decisions, the most it keeps"
        case .size(let bytes):
            "the grants file would grow to \(bytes) bytes, more than the \(GrantStore.maximumTextSize) it may have"
        }
    }
}

/// A grants file that cannot be read.
public struct GrantStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var reason: String
    public var description: String { "\(file):\(line): \(reason)" }
}
