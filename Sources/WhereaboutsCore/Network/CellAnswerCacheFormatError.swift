/// Why a cell answer cache file was refused, and on which line: `line <n>: <problem>`. The caller moves the file
/// aside and starts empty.
public typealias CellAnswerCacheFormatError = LineError<CacheLineProblem<CellAnswerCacheEntryProblem>>

/// What is wrong with a cell answer cache entry's cells.
public enum CellAnswerCacheEntryProblem: CacheEntryProblem {
    /// An entry has no cells or more than ``CellAnswerCache/maximumCellsPerEntry``.
    case cellCount(Int)
    /// A cell is not `RADIO:MCC:MNC:AREA:CELLID` with a known radio and decimal numbers.
    case invalidCell(String)
    /// A cell is well formed but not one a positioning service can look up (``ServingCell``'s rules).
    case refusedCell(String, CellLocationError)
    /// An entry lists a cell twice.
    case duplicateCell(String)

    /// `cell answer cache`.
    public static let fileKind = "cell answer cache"
    /// ``CellAnswerCache/formatName`` and ``CellAnswerCache/formatVersion``.
    public static let header = "\(CellAnswerCache.formatName) \(CellAnswerCache.formatVersion)"
    /// Time, latitude, longitude, accuracy and cells.
    public static let entryFields = "time, latitude, longitude, accuracy and cells"

    /// A human explanation.
    public var description: String {
        switch self {
        case .cellCount(let count): "\(count) cells; an entry has 1 to \(CellAnswerCache.maximumCellsPerEntry)"
        case .invalidCell(let text):
            "cell \(shortQuoted(text)) is not RADIO:MCC:MNC:AREA:CELLID (gsm, wcdma, lte or nr, decimal numbers)"
        case .refusedCell(let text, let reason): "cell \(shortQuoted(text)) cannot be looked up: \(reason)"
        case .duplicateCell(let text): "cell \(shortQuoted(text)) is listed twice"
        }
    }
}
