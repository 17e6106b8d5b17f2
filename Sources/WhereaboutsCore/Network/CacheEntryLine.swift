/// An entry line of a cache file (see ``CacheTextFormat``), split at every space.
struct CacheEntryLine<EntryProblem: CacheEntryProblem> {
    /// Why the line was refused.
    typealias Failure = LineError<CacheLineProblem<EntryProblem>>
    /// The time, position and accuracy every entry has.
    typealias CommonFields = (stored: WallTime, latitude: Double, longitude: Double, accuracy: Double)

    /// The 1-based line.
    let line: Int
    /// The fields, at least as many as the format asks for.
    let fields: [String]

    /// Splits `text`, which is line `line`, into its fields.
    ///
    /// - Throws: for an empty line, or one with fewer than `minimumFieldCount` fields.
    init(_ text: String, line: Int, minimumFieldCount: Int) throws(Failure) {
        guard !text.isEmpty else { throw Failure(line: line, problem: .emptyLine) }
        let fields = text.unicodeScalars.split(separator: " ", omittingEmptySubsequences: false)
            .map { String(String.UnicodeScalarView($0)) }
        guard fields.count >= minimumFieldCount else { throw Failure(line: line, problem: .fieldCount(fields.count)) }
        self.line = line
        self.fields = fields
    }

    /// The error for `problem` on this line.
    func failure(_ problem: EntryProblem) -> Failure { Failure(line: line, problem: .entry(problem)) }

    /// The time, latitude, longitude and accuracy in the four fields from `start`, checked in that order; a finite
    /// accuracy must also pass `isValidAccuracy`, the format's range.
    func commonFields(from start: Int, isValidAccuracy: (Double) -> Bool) throws(Failure) -> CommonFields {
        func fail(_ problem: CacheLineProblem<EntryProblem>) -> Failure { Failure(line: line, problem: problem) }
        let time = fields[start]
        guard time.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let microseconds = Int64(time)
        else { throw fail(.invalidTime(time)) }
        guard let latitude = Self.decimal(fields[start + 1]), (-90...90).contains(latitude) else {
            throw fail(.invalidLatitude(fields[start + 1]))
        }
        guard let longitude = Self.decimal(fields[start + 2]), (-180...180).contains(longitude) else {
            throw fail(.invalidLongitude(fields[start + 2]))
        }
        guard let accuracy = Self.decimal(fields[start + 3]), isValidAccuracy(accuracy) else {
            throw fail(.invalidAccuracy(fields[start + 3]))
        }
        return (WallTime(microseconds: microseconds), latitude, longitude, accuracy)
    }

    /// A finite decimal number (digits, sign, point and exponent only: no `nan`, `inf` or hex).
    private static func decimal(_ text: String) -> Double? {
        let allowed = Set("0123456789+-.eE".utf8)
        guard !text.isEmpty, text.utf8.allSatisfy(allowed.contains), let value = Double(text), value.isFinite else {
            return nil
        }
        return value
    }
}
