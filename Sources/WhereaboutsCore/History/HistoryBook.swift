/// Every user's history of location use: what each app used and which requests left the machine because of it,
/// kept for ``maximumAge`` and bounded per user and in all, and what of it is still to be written to the users'
/// files.
///
/// Pure: no I/O and no clock of its own; times come in as arguments.
///
/// **Bounds.** A user keeps at most ``limitPerUser`` entries, the oldest dropped first, and no entry older than
/// ``maximumAge``. All users together keep at most ``limitInAll``; past it the oldest entry of the user keeping
/// the most is dropped, so a user's flood can shrink another's record only down to an equal share.
///
/// **Writes.** ``takeWrites(now:)`` says what to write: a user's new entries as lines appended to the file,
/// or the file written whole when it holds more than ``rewriteMargin`` lines beyond what the user keeps (dropped
/// past the limit), a line expired more than ``expirySlack`` ago, or a torn line; or the file removed when the user
/// keeps nothing. So writes are proportional to what changed: an entry costs a line, and a user at the limit a
/// whole file once every ``rewriteMargin`` entries.
public struct HistoryBook: Sendable {
    /// The most entries one user keeps.
    public static let limitPerUser = 10_000
    /// The most entries kept, all users together: ten users at the limit, about 200 bytes each in memory.
    public static let limitInAll = 100_000
    /// How long an entry is kept.
    public static let maximumAge: Duration = .seconds(7 * 24 * 3600)
    /// How many lines a user's file may hold beyond the entries kept before it is written whole.
    public static let rewriteMargin = 1_000
    /// How long past ``maximumAge`` an expired line may stay in a file before it is written whole.
    public static let expirySlack: Duration = .seconds(3600)

    private var users: [UInt32: UserHistory] = [:]
    /// The users whose file is to be removed: cleared, or whose every entry expired or was dropped.
    private var removals: Set<UInt32> = []
    /// How many entries are kept, all users together.
    public private(set) var count = 0

    public init() {}

    /// The users who keep entries, sorted.
    public var keepingUsers: [UInt32] { users.keys.filter { users[$0]!.count > 0 }.sorted() }

    /// Keeps `entry` in the history of `user`, dropping what passes the bounds at `now`.
    public mutating func record(_ entry: HistoryEntry, user: UInt32, now: WallTime) {
        users[user, default: UserHistory()].append(entry)
        removals.remove(user)
        count += 1
        dropExpired(ofUser: user, now: now)
        while users[user]!.count > Self.limitPerUser { dropOldest(ofUser: user) }
        keepTotalBound()
    }

    /// The entries of `user` that ended at or after `since`, oldest first, without those expired at `now`.
    public func entries(ofUser user: UInt32, since: WallTime, now: WallTime) -> [HistoryEntry] {
        let oldest = max(since, now.advanced(by: .zero - Self.maximumAge))
        return users[user]?.entries.filter { $0.time >= oldest } ?? []
    }

    /// Forgets every entry of `user`; the next writes remove the file.
    public mutating func clear(user: UInt32) {
        guard let history = users.removeValue(forKey: user) else { return }
        count -= history.count
        if history.hasFile { removals.insert(user) }
    }

    /// Takes in what the file of `user` held (``HistoryFile/parse(_:now:file:)``), as far as the bounds allow at
    /// `now`; the file is to be written whole at the next writes when it held a torn line, or entries that were
    /// left out. Returns how many entries of the file were left out past the bounds.
    @discardableResult
    public mutating func adopt(_ content: HistoryFile.Content, ofUser user: UInt32, now: WallTime) -> Int {
        var history = UserHistory()
        let kept = content.entries.suffix(Self.limitPerUser)
        for entry in kept { history.append(entry) }
        history.hasFile = true
        history.linesOnDisk = content.lines
        history.oldestOnDisk = content.oldestLine
        history.unwritten = []
        history.needsRewrite = content.tornLine || kept.count < content.lines
        clear(user: user)
        users[user] = history
        removals.remove(user)
        count += history.count
        let withAll = count
        keepTotalBound()
        return content.entries.count - kept.count + withAll - count
    }

    /// Notes that writing the file of `user` failed: it is written whole at the next writes.
    public mutating func writeFailed(ofUser user: UInt32) {
        users[user]?.needsRewrite = true
    }

    /// What to write now, and notes it written: each user's new lines, or a user's file whole or removed (see
    /// the type's description). Drops the entries expired at `now` first.
    public mutating func takeWrites(now: WallTime) -> [HistoryWrite] {
        var writes = removals.sorted().map { HistoryWrite.remove(user: $0) }
        removals = []
        for user in users.keys.sorted() {
            dropExpired(ofUser: user, now: now)
            guard var history = users[user] else { continue }
            if history.count == 0 {
                users[user] = nil
                if history.hasFile { writes.append(.remove(user: user)) }
                continue
            }
            let staleLine = history.oldestOnDisk.map {
                $0 <= now.advanced(by: .zero - Self.maximumAge - Self.expirySlack)
            }
            let wholeFile =
                !history.hasFile || history.needsRewrite || staleLine == true
                || history.linesOnDisk + history.unwritten.count > history.count + Self.rewriteMargin
            if wholeFile {
                writes.append(.rewrite(user: user, text: HistoryFile.serialize(history.entries)))
                history.writtenWhole()
            } else if !history.unwritten.isEmpty {
                writes.append(.append(user: user, lines: HistoryFile.lines(of: history.unwritten)))
                history.linesOnDisk += history.unwritten.count
                history.oldestOnDisk = history.oldestOnDisk ?? history.unwritten.first?.time
                history.unwritten = []
            }
            users[user] = history
        }
        return writes
    }

    /// When ``takeWrites(now:)`` next has something to do with nothing new recorded: when the oldest line of a
    /// file is ``expirySlack`` past ``maximumAge``; nil when no file holds a line.
    public var nextExpiry: WallTime? {
        users.values.compactMap(\.oldestOnDisk).min().map { $0.advanced(by: Self.maximumAge + Self.expirySlack) }
    }

    private mutating func dropExpired(ofUser user: UInt32, now: WallTime) {
        let oldest = now.advanced(by: .zero - Self.maximumAge)
        while let entry = users[user]?.oldest, entry.time < oldest { dropOldest(ofUser: user) }
    }

    private mutating func dropOldest(ofUser user: UInt32) {
        guard users[user]?.count ?? 0 > 0 else { return }
        users[user]!.dropOldest()
        count -= 1
    }

    /// Drops the oldest entries of whoever keeps the most while more than ``limitInAll`` are kept.
    private mutating func keepTotalBound() {
        while count > Self.limitInAll {
            guard let largest = users.max(by: { ($0.value.count, $1.key) < ($1.value.count, $0.key) })?.key else {
                return
            }
            dropOldest(ofUser: largest)
        }
    }
}

/// What to do with a user's history file.
public enum HistoryWrite: Sendable, Equatable {
    /// Append these lines (``HistoryFile/lines(of:)``) to the user's file.
    case append(user: UInt32, lines: String)
    /// Write the user's file whole with this text (``HistoryFile/serialize(_:)``).
    case rewrite(user: UInt32, text: String)
    /// Remove the user's file.
    case remove(user: UInt32)

    /// Whose file it is.
    public var user: UInt32 {
        switch self {
        case .append(let user, _), .rewrite(let user, _), .remove(let user): user
        }
    }
}
