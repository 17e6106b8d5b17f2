/// What the cache files' formats share (``PositionCache``'s and ``CellAnswerCache``'s): a first line
/// `<name> <version>`, then an entry a line, its fields separated by one space; four of them, from a place the
/// format chooses, are the time stored in microseconds since 1970, latitude and longitude in degrees and the
/// accuracy in metres (see ``CacheEntryLine``). The text ends with a line break.
struct CacheTextFormat<EntryProblem: CacheEntryProblem> {
    /// Why a file of the format was refused.
    typealias Failure = LineError<CacheLineProblem<EntryProblem>>

    /// The first line's words before the version.
    let name: String
    /// The version written and read.
    let version: Int
    /// How many fields an entry line has at least.
    let minimumFieldCount: Int

    /// The text of the entries given as their fields, in order, after the header.
    func text(ofEntries entries: [[String]]) -> String {
        var text = "\(name) \(version)\n"
        for fields in entries { text += fields.joined(separator: " ") + "\n" }
        return text
    }

    /// The fields of an entry's time, position and accuracy, numbers written so they read back exactly.
    func commonFields(stored: WallTime, latitude: Double, longitude: Double, accuracy: Double) -> [String] {
        [
            String(stored.microseconds), JSONWriter.text(of: latitude), JSONWriter.text(of: longitude),
            JSONWriter.text(of: accuracy),
        ]
    }

    /// Checks the header of `text`, then hands each entry line to `read`, in order.
    ///
    /// - Throws: for the first line that is not valid: a first line that is not this format's header, an empty
    ///   line, one with fewer than ``minimumFieldCount`` fields, or what `read` finds wrong.
    func readEntries(of text: String, _ read: (CacheEntryLine<EntryProblem>) throws(Failure) -> Void)
        throws(Failure)
    {
        // Lines split at every line feed, also one that ends a `\r\n` (a single Character in Swift).
        var lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
            .map { String(String.UnicodeScalarView($0)) }
        if lines.count > 1, lines.last?.isEmpty == true { lines.removeLast() }
        try checkHeader(lines.first ?? "")
        for (offset, line) in lines.enumerated().dropFirst() {
            try read(try CacheEntryLine(line, line: offset + 1, minimumFieldCount: minimumFieldCount))
        }
    }

    private func checkHeader(_ header: String) throws(Failure) {
        let words = header.split(separator: " ", omittingEmptySubsequences: false)
        guard words.count == 2, words[0] == name else { throw Failure(line: 1, problem: .missingHeader) }
        guard words[1] == String(version) else {
            throw Failure(line: 1, problem: .unsupportedVersion(String(words[1])))
        }
    }
}
