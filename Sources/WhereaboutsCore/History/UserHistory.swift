/// One user's entries, oldest first, and what of them is on disk: the entries ``HistoryBook`` keeps for a user.
///
/// Dropping the oldest entry costs nothing at once: the storage is compacted only once more than half of it is
/// dropped, so a user at the limit, whose every new entry drops one, costs a constant time an entry on average.
struct UserHistory: Sendable {
    private var storage: [HistoryEntry] = []
    private var head = 0

    /// True while the user has a file (written or read), whose lines an append follows.
    var hasFile = false
    /// How many entry lines the file holds: those kept and those dropped since it was last written whole.
    var linesOnDisk = 0
    /// When the oldest line of the file ended.
    var oldestOnDisk: WallTime?
    /// The entries kept since the last write, to append.
    var unwritten: [HistoryEntry] = []
    /// True when the file must be written whole at the next write: it holds a torn line, or a write failed.
    var needsRewrite = false

    var count: Int { storage.count - head }
    var entries: ArraySlice<HistoryEntry> { storage[head...] }
    var oldest: HistoryEntry? { head < storage.count ? storage[head] : nil }

    mutating func append(_ entry: HistoryEntry) {
        storage.append(entry)
        unwritten.append(entry)
    }

    /// Drops the oldest entry; one still unwritten is not written at all.
    mutating func dropOldest() {
        guard head < storage.count else { return }
        if count == unwritten.count { unwritten.removeFirst() }
        head += 1
        if head > 64 && head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }

    /// Notes that the file now holds exactly the entries kept.
    mutating func writtenWhole() {
        hasFile = !entries.isEmpty
        linesOnDisk = count
        oldestOnDisk = oldest?.time
        unwritten = []
        needsRewrite = false
    }
}
