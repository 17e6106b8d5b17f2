/// What is wrong with a line of a cache file: its header, the line itself, the time, position or accuracy every
/// entry has, or the fields its format adds (`EntryProblem`).
public enum CacheLineProblem<EntryProblem: CacheEntryProblem>: Sendable, Equatable, CustomStringConvertible {
    /// The first line is not ``CacheEntryProblem/header`` (the format's name, then a version).
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
    /// The accuracy is not a finite number in the range the format allows for the entry.
    case invalidAccuracy(String)
    /// One of the fields the format adds is wrong.
    case entry(EntryProblem)

    /// A human explanation.
    public var description: String {
        switch self {
        case .missingHeader: "not a \(EntryProblem.fileKind): the first line is not '\(EntryProblem.header)'"
        case .unsupportedVersion(let version): "unsupported version \(shortQuoted(version))"
        case .emptyLine: "empty line"
        case .fieldCount(let count): "\(count) fields; an entry has \(EntryProblem.entryFields)"
        case .invalidTime(let text): "time \(shortQuoted(text)) is not microseconds since 1970"
        case .invalidLatitude(let text): "latitude \(shortQuoted(text)) is not a number in -90...90"
        case .invalidLongitude(let text): "longitude \(shortQuoted(text)) is not a number in -180...180"
        case .invalidAccuracy(let text): "accuracy \(shortQuoted(text)) is out of range"
        case .entry(let problem): problem.description
        }
    }
}

// MARK: - Text helpers shared by the cache formats' problems

/// `text` in single quotes, cut to 40 characters.
func shortQuoted(_ text: String) -> String {
    "'" + (text.count > 40 ? text.prefix(40) + "…" : text) + "'"
}
