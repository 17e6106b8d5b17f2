/// Why a cell answer cache file was refused, and on which line; the caller moves the file aside and starts empty.
///
/// Its ``description`` reads `line <n>: <problem>`.
public struct CellAnswerCacheFormatError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public enum Problem: Sendable, Equatable, CustomStringConvertible {
        /// The first line is not `whereabouts-cell-cache <version>`.
        case missingHeader
        /// The first line names a version this build does not read.
        case unsupportedVersion(String)
        /// A line is empty (only the text's last line break may be followed by nothing).
        case emptyLine
        /// An entry line has too few fields.
        case fieldCount(Int)
        /// The time is not whole microseconds since 1970, 0 or more.
        case invalidTime(String)
        /// The latitude is not a finite number in −90…90.
        case invalidLatitude(String)
        /// The longitude is not a finite number in −180…180.
        case invalidLongitude(String)
        /// The accuracy is not a finite number above 0 and at most ``IchnaeaOutcome/maximumCellAccuracy``.
        case invalidAccuracy(String)
        /// An entry has no cells or more than ``CellAnswerCache/maximumCellsPerEntry``.
        case cellCount(Int)
        /// A cell is not `RADIO:MCC:MNC:AREA:CELLID` with a known radio and decimal numbers.
        case invalidCell(String)
        /// A cell is well formed but not one a positioning service can look up (``ServingCell``'s rules).
        case refusedCell(String, CellLocationError)
        /// An entry lists a cell twice.
        case duplicateCell(String)

        /// A human explanation.
        public var description: String {
            switch self {
            case .missingHeader: "not a cell answer cache: the first line is not 'whereabouts-cell-cache 1'"
            case .unsupportedVersion(let version): "unsupported version \(shown(version))"
            case .emptyLine: "empty line"
            case .fieldCount(let count):
                "\(count) fields; an entry has time, latitude, longitude, accuracy and cells"
            case .invalidTime(let text): "time \(shown(text)) is not microseconds since 1970"
            case .invalidLatitude(let text): "latitude \(shown(text)) is not a number in -90...90"
            case .invalidLongitude(let text): "longitude \(shown(text)) is not a number in -180...180"
            case .invalidAccuracy(let text): "accuracy \(shown(text)) is out of range"
            case .cellCount(let count):
                "\(count) cells; an entry has 1 to \(CellAnswerCache.maximumCellsPerEntry)"
            case .invalidCell(let text):
                "cell \(shown(text)) is not RADIO:MCC:MNC:AREA:CELLID (gsm, wcdma, lte or nr, decimal numbers)"
            case .refusedCell(let text, let reason): "cell \(shown(text)) cannot be looked up: \(reason)"
            case .duplicateCell(let text): "cell \(shown(text)) is listed twice"
            }
        }

        /// `text` quoted, cut to 40 characters.
        private func shown(_ text: String) -> String {
            "'" + (text.count > 40 ? text.prefix(40) + "…" : text) + "'"
        }
    }

    /// The 1-based line.
    public var line: Int
    /// What is wrong.
    public var problem: Problem

    /// Makes an error.
    public init(line: Int, problem: Problem) {
        self.line = line
        self.problem = problem
    }

    /// `line <n>: <problem>`.
    public var description: String { "line \(line): \(problem)" }
}
