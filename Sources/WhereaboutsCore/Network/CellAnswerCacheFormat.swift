/// The cell answer cache as text, one entry a line, least recently used first:
///
///     whereabouts-cell-cache 1
///     1700000000000000 48.137154 11.576124 1200 lte:262:1:4660:26383617
///     1700000360000000 52.52 13.405 5000 gsm:262:2:1001:12345 wcdma:262:2:1001:8012345
///
/// Fields are separated by one space: the time stored in microseconds since 1970, latitude and longitude in
/// degrees, the accuracy in metres (above 0 and at most ``IchnaeaOutcome/maximumCellAccuracy``), then 1 to
/// ``CellAnswerCache/maximumCellsPerEntry`` cells, each once, each `RADIO:MCC:MNC:AREA:CELLID`: the radio
/// (`gsm`, `wcdma`, `lte` or `nr`), then the country code, network code, area code and cell id in decimal, which
/// ``ServingCell/init(radio:mobileCountryCode:mobileNetworkCode:areaCode:cellID:)`` must accept. Cells are written
/// in ``CellAnswerCache/key(_:)`` order; read in any. Numbers are written so they read back exactly. The text ends
/// with a line break.
extension CellAnswerCache {
    /// The first line's words before the version.
    public static let formatName = "whereabouts-cell-cache"
    /// The version written and read.
    public static let formatVersion = 1

    /// The cache as text (see the format above).
    public func serialized() -> String {
        var text = "\(CellAnswerCache.formatName) \(CellAnswerCache.formatVersion)\n"
        for entry in entries {
            var fields = [
                String(entry.stored.microseconds), JSONWriter.text(of: entry.latitude),
                JSONWriter.text(of: entry.longitude), JSONWriter.text(of: entry.accuracy),
            ]
            fields += entry.cells.map(CellAnswerCache.text(of:))
            text += fields.joined(separator: " ") + "\n"
        }
        return text
    }

    /// Reads a cache written by ``serialized()``, keeping at most `capacity` entries (the most recently used).
    ///
    /// Every field is checked; entries past their age at `now` are left out, which is no error, and of two lines
    /// for the same cells the later one is kept.
    ///
    /// - Throws: ``CellAnswerCacheFormatError`` for the first line that is not valid: the caller moves the file
    ///   aside rather than trusting any of it.
    public static func parse(
        _ text: String, now: WallTime, capacity: Int = CellAnswerCache.defaultCapacity
    ) throws(CellAnswerCacheFormatError) -> CellAnswerCache {
        // Lines split at every line feed, also one that ends a `\r\n` (a single Character in Swift).
        var lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
            .map { String(String.UnicodeScalarView($0)) }
        if lines.count > 1, lines.last?.isEmpty == true { lines.removeLast() }
        try checkHeader(lines.first ?? "")
        var cache = CellAnswerCache(capacity: capacity)
        for (offset, line) in lines.enumerated().dropFirst() {
            cache.append(try entry(line, line: offset + 1), now: now)
        }
        return cache
    }

    /// `RADIO:MCC:MNC:AREA:CELLID`, the numbers in decimal.
    private static func text(of cell: ServingCell) -> String {
        "\(cell.radio.ichnaeaName):\(cell.mobileCountryCode):\(cell.mobileNetworkCode):\(cell.areaCode):\(cell.cellID)"
    }

    private static func checkHeader(_ header: String) throws(CellAnswerCacheFormatError) {
        let words = header.split(separator: " ", omittingEmptySubsequences: false)
        guard words.count == 2, words[0] == formatName else {
            throw CellAnswerCacheFormatError(line: 1, problem: .missingHeader)
        }
        guard words[1] == String(formatVersion) else {
            throw CellAnswerCacheFormatError(line: 1, problem: .unsupportedVersion(String(words[1])))
        }
    }

    private static func entry(_ text: String, line: Int) throws(CellAnswerCacheFormatError) -> Entry {
        func fail(_ problem: CellAnswerCacheFormatError.Problem) -> CellAnswerCacheFormatError {
            CellAnswerCacheFormatError(line: line, problem: problem)
        }
        guard !text.isEmpty else { throw fail(.emptyLine) }
        let fields = text.unicodeScalars.split(separator: " ", omittingEmptySubsequences: false)
            .map { String(String.UnicodeScalarView($0)) }
        guard fields.count >= 4 else { throw fail(.fieldCount(fields.count)) }
        guard let microseconds = natural(fields[0]).map({ Int64($0) }) else {
            throw fail(.invalidTime(fields[0]))
        }
        guard let latitude = decimal(fields[1]), (-90...90).contains(latitude) else {
            throw fail(.invalidLatitude(fields[1]))
        }
        guard let longitude = decimal(fields[2]), (-180...180).contains(longitude) else {
            throw fail(.invalidLongitude(fields[2]))
        }
        guard let accuracy = decimal(fields[3]), isValidAccuracy(accuracy) else {
            throw fail(.invalidAccuracy(fields[3]))
        }
        let cellFields = fields.dropFirst(4)
        guard (1...maximumCellsPerEntry).contains(cellFields.count) else { throw fail(.cellCount(cellFields.count)) }
        var cells: [ServingCell] = []
        for field in cellFields {
            let cell = try servingCell(field, line: line)
            guard !cells.contains(cell) else { throw fail(.duplicateCell(field)) }
            cells.append(cell)
        }
        return Entry(
            cells: key(cells), latitude: latitude, longitude: longitude, accuracy: accuracy,
            stored: WallTime(microseconds: microseconds))
    }

    /// The cell of a `RADIO:MCC:MNC:AREA:CELLID` field.
    private static func servingCell(_ field: String, line: Int) throws(CellAnswerCacheFormatError) -> ServingCell {
        let parts = field.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 5, let radio = CellRadio.allCases.first(where: { $0.ichnaeaName == parts[0] }),
            let countryCode = natural(parts[1]), let networkCode = natural(parts[2]), let areaCode = natural(parts[3]),
            let cellID = natural(parts[4])
        else { throw CellAnswerCacheFormatError(line: line, problem: .invalidCell(field)) }
        do {
            return try ServingCell(
                radio: radio, mobileCountryCode: countryCode, mobileNetworkCode: networkCode, areaCode: areaCode,
                cellID: cellID)
        } catch {
            throw CellAnswerCacheFormatError(line: line, problem: .refusedCell(field, error))
        }
    }

    /// A whole number of decimal digits only (no sign), that fits an `Int`.
    private static func natural(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return nil
        }
        return Int(text)
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
