/// Why a history file was refused, and on which line: `<file>:<line>: <problem>`. The service moves the file
/// aside rather than trusting any of it.
public typealias HistoryFileError = LocatedError<HistoryFileProblem>

/// What is wrong with a line of a history file (see ``HistoryFile``).
public enum HistoryFileProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// The first line is not ``HistoryFile/header``.
    case missingHeader
    /// More than ``HistoryFile/maximumLines`` lines.
    case tooManyLines
    /// A line of ``HistoryFile/maximumLineBytes`` or more.
    case lineTooLong
    /// An empty line.
    case emptyLine
    /// A line that is neither a `use` nor a `lookup`.
    case unknownLineKind(String)
    /// A line with the wrong number of tab-separated fields.
    case fieldCount(found: Int, expected: Int)
    /// A field that cannot be read.
    case invalidField(name: String, value: String)

    public var description: String {
        switch self {
        case .missingHeader: "the first line is not '\(HistoryFile.header)'"
        case .tooManyLines: "more than \(HistoryFile.maximumLines) lines"
        case .lineTooLong: "a line of \(HistoryFile.maximumLineBytes) bytes or more"
        case .emptyLine: "an empty line"
        case .unknownLineKind(let kind): "unknown line kind '\(kind)'"
        case .fieldCount(let found, let expected): "\(found) fields where \(expected) are expected"
        case .invalidField(let name, let value): "invalid \(name) '\(value)'"
        }
    }
}
