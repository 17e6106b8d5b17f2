/// A cache the service keeps as text in a file of its own (``PositionCache``, ``CellAnswerCache``), in the format
/// ``CacheTextFormat`` describes: what the file needs of it.
public protocol TextCache: Sendable {
    /// Why a text was refused: the first line that is not valid, and what is wrong with it.
    associatedtype FormatError: Error
    /// What a file of the cache is, as in `not a position cache`.
    static var fileKind: String { get }
    /// How many entries a cache keeps unless told otherwise.
    static var defaultCapacity: Int { get }
    /// An empty cache keeping at most `capacity` entries.
    init(capacity: Int)
    /// The cache as text.
    func serialized() -> String
    /// Reads a cache written by ``serialized()``, keeping at most `capacity` entries (the most recently used);
    /// entries past their age at `now` are left out.
    static func parse(_ text: String, now: WallTime, capacity: Int) throws(FormatError) -> Self
}

/// A ``TextCache`` whose entries are lines of a ``CacheTextFormat``: how one is read and kept, from which
/// ``read(_:now:capacity:)`` reads them all.
protocol CacheTextEntries: TextCache where FormatError == LineError<CacheLineProblem<EntryProblem>> {
    /// What can be wrong with the fields the format adds to every entry's time, position and accuracy.
    associatedtype EntryProblem: CacheEntryProblem
    /// One entry of the cache.
    associatedtype Entry
    /// The header and the fields of the cache's format.
    static var textFormat: CacheTextFormat<EntryProblem> { get }
    /// The entry a line holds, every field checked.
    static func entry(_ line: CacheEntryLine<EntryProblem>) throws(FormatError) -> Entry
    /// Adds a checked entry as the most recently used, unless it is past its age at `now`.
    mutating func append(_ entry: Entry, now: WallTime)
}

extension CacheTextEntries {
    /// The cache `text` holds, each entry line read with ``entry(_:)`` and added with ``append(_:now:)``, in order,
    /// into a cache of at most `capacity` entries.
    ///
    /// - Throws: for the first line that is not valid.
    static func read(_ text: String, now: WallTime, capacity: Int) throws(FormatError) -> Self {
        var cache = Self(capacity: capacity)
        try textFormat.readEntries(of: text) { line throws(FormatError) in cache.append(try entry(line), now: now) }
        return cache
    }
}
