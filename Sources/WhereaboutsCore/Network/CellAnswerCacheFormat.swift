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
extension CellAnswerCache: CacheTextEntries {
    /// The first line's words before the version.
    public static let formatName = "whereabouts-cell-cache"
    /// The version written and read.
    public static let formatVersion = 1
    /// What a file of the cache is (``CellAnswerCacheEntryProblem/fileKind``).
    public static var fileKind: String { CellAnswerCacheEntryProblem.fileKind }

    /// The cache as text (see the format above).
    public func serialized() -> String {
        Self.textFormat.text(
            ofEntries: entries.map { entry in
                Self.textFormat.commonFields(
                    stored: entry.stored, latitude: entry.latitude, longitude: entry.longitude,
                    accuracy: entry.accuracy) + entry.cells.map(CellAnswerCache.text(of:))
            })
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
        try read(text, now: now, capacity: capacity)
    }

    /// The header and the fields this format shares with the other caches': time, position and accuracy, then the
    /// cells.
    static let textFormat = CacheTextFormat<CellAnswerCacheEntryProblem>(
        name: formatName, version: formatVersion, minimumFieldCount: 4)

    /// `RADIO:MCC:MNC:AREA:CELLID`, the numbers in decimal.
    private static func text(of cell: ServingCell) -> String {
        "\(cell.radio.ichnaeaName):\(cell.mobileCountryCode):\(cell.mobileNetworkCode):\(cell.areaCode):\(cell.cellID)"
    }

    static func entry(_ line: CacheEntryLine<CellAnswerCacheEntryProblem>) throws(CellAnswerCacheFormatError)
        -> Entry
    {
        let common = try line.commonFields(from: 0, isValidAccuracy: isValidAccuracy)
        let cellFields = line.fields.dropFirst(4)
        guard (1...maximumCellsPerEntry).contains(cellFields.count) else {
            throw line.failure(.cellCount(cellFields.count))
        }
        var cells: [ServingCell] = []
        for field in cellFields {
            let cell = try servingCell(field, on: line)
            guard !cells.contains(cell) else { throw line.failure(.duplicateCell(field)) }
            cells.append(cell)
        }
        return Entry(
            cells: key(cells), latitude: common.latitude, longitude: common.longitude, accuracy: common.accuracy,
            stored: common.stored)
    }

    /// The cell of a `RADIO:MCC:MNC:AREA:CELLID` field.
    private static func servingCell(_ field: String, on line: CacheEntryLine<CellAnswerCacheEntryProblem>)
        throws(CellAnswerCacheFormatError) -> ServingCell
    {
        let parts = field.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 5, let radio = CellRadio.allCases.first(where: { $0.ichnaeaName == parts[0] }),
            let countryCode = natural(parts[1]), let networkCode = natural(parts[2]), let areaCode = natural(parts[3]),
            let cellID = natural(parts[4])
        else { throw line.failure(.invalidCell(field)) }
        do {
            return try ServingCell(
                radio: radio, mobileCountryCode: countryCode, mobileNetworkCode: networkCode, areaCode: areaCode,
                cellID: cellID)
        } catch {
            throw line.failure(.refusedCell(field, error))
        }
    }

    /// A whole number of decimal digits only (no sign), that fits an `Int`.
    private static func natural(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return nil
        }
        return Int(text)
    }
}
