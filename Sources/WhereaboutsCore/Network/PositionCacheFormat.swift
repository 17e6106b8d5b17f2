/// The position cache as text, one entry a line, least recently used first:
///
///     whereabouts-position-cache 1
///     network 1700000000000000 48.137154 11.576124 35 00:1a:2b:00:00:01=-48 00:1a:2b:00:00:02=-71
///     learned 1700000360000000 48.1372 11.5761 6.5 00:1a:2b:00:00:01=-52 00:1a:2b:00:00:07=-80
///
/// Fields are separated by one space: the origin (`network` or `learned`), the time stored in microseconds since
/// 1970, latitude and longitude in degrees, the accuracy in metres (above 0 and at most
/// ``PositionCache/maximumAccuracy`` for an answer, 0 or more and below ``PositionCache/learnAccuracyBelow`` for a
/// learnt place), then 2 to ``PositionCache/maximumAccessPointsPerEntry`` access points, each a lower-case BSSID,
/// `=` and the signal in dBm (−100…−10). Numbers are written so they read back exactly. The text ends with a line
/// break.
extension PositionCache {
    /// The first line's words before the version.
    public static let formatName = "whereabouts-position-cache"
    /// The version written and read.
    public static let formatVersion = 1

    /// The cache as text (see the format above).
    public func serialized() -> String {
        var text = "\(PositionCache.formatName) \(PositionCache.formatVersion)\n"
        for entry in entries {
            var fields = [
                entry.origin.rawValue, String(entry.stored.microseconds), JSONWriter.text(of: entry.latitude),
                JSONWriter.text(of: entry.longitude), JSONWriter.text(of: entry.accuracy),
            ]
            fields += entry.accessPoints.map { "\($0.bssid)=\($0.signal)" }
            text += fields.joined(separator: " ") + "\n"
        }
        return text
    }

    /// Reads a cache written by ``serialized()``, keeping at most `capacity` entries (the most recently used).
    ///
    /// Every field is checked; entries past their age at `now` are left out, which is no error.
    ///
    /// - Throws: ``PositionCacheFormatError`` for the first line that is not valid: the caller moves the file
    ///   aside rather than trusting any of it.
    public static func parse(
        _ text: String, now: WallTime, capacity: Int = PositionCache.defaultCapacity
    ) throws(PositionCacheFormatError) -> PositionCache {
        // Lines split at every line feed, also one that ends a `\r\n` (a single Character in Swift).
        var lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
            .map { String(String.UnicodeScalarView($0)) }
        if lines.count > 1, lines.last?.isEmpty == true { lines.removeLast() }
        try checkHeader(lines.first ?? "")
        var cache = PositionCache(capacity: capacity)
        for (offset, line) in lines.enumerated().dropFirst() {
            cache.append(try entry(line, line: offset + 1), now: now)
        }
        return cache
    }

    private static func checkHeader(_ header: String) throws(PositionCacheFormatError) {
        let words = header.split(separator: " ", omittingEmptySubsequences: false)
        guard words.count == 2, words[0] == formatName else {
            throw PositionCacheFormatError(line: 1, problem: .missingHeader)
        }
        guard words[1] == String(formatVersion) else {
            throw PositionCacheFormatError(line: 1, problem: .unsupportedVersion(String(words[1])))
        }
    }

    private static func entry(_ text: String, line: Int) throws(PositionCacheFormatError) -> Entry {
        func fail(_ problem: PositionCacheFormatError.Problem) -> PositionCacheFormatError {
            PositionCacheFormatError(line: line, problem: problem)
        }
        guard !text.isEmpty else { throw fail(.emptyLine) }
        let fields = text.unicodeScalars.split(separator: " ", omittingEmptySubsequences: false)
            .map { String(String.UnicodeScalarView($0)) }
        guard fields.count >= 5 else { throw fail(.fieldCount(fields.count)) }
        guard let origin = Origin(rawValue: fields[0]) else { throw fail(.unknownOrigin(fields[0])) }
        guard fields[1].utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let microseconds = Int64(fields[1])
        else { throw fail(.invalidTime(fields[1])) }
        guard let latitude = decimal(fields[2]), (-90...90).contains(latitude) else {
            throw fail(.invalidLatitude(fields[2]))
        }
        guard let longitude = decimal(fields[3]), (-180...180).contains(longitude) else {
            throw fail(.invalidLongitude(fields[3]))
        }
        guard let accuracy = decimal(fields[4]),
            origin == .network
                ? accuracy > 0 && accuracy <= maximumAccuracy : accuracy >= 0 && accuracy < learnAccuracyBelow
        else { throw fail(.invalidAccuracy(fields[4])) }
        let accessPointFields = fields.dropFirst(5)
        guard (AccessPointSelection.minimumForQuery...maximumAccessPointsPerEntry).contains(accessPointFields.count)
        else { throw fail(.accessPointCount(accessPointFields.count)) }
        var sightings: [AccessPointSighting] = []
        var seen: Set<BSSID> = []
        for field in accessPointFields {
            let parts = field.split(separator: "=", omittingEmptySubsequences: false)
            guard parts.count == 2, let bssid = BSSID(text: String(parts[0])), bssid.description == parts[0],
                let signal = Int(parts[1]),
                (AccessPointSelection.weakestSignal...AccessPointSelection.strongestSignal).contains(signal)
            else { throw fail(.invalidAccessPoint(field)) }
            guard seen.insert(bssid).inserted else { throw fail(.duplicateAccessPoint(bssid.description)) }
            sightings.append(AccessPointSighting(bssid: bssid, signal: signal))
        }
        return Entry(
            accessPoints: normalised(sightings), latitude: latitude, longitude: longitude, accuracy: accuracy,
            origin: origin, stored: WallTime(microseconds: microseconds))
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
