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
extension PositionCache: CacheTextEntries {
    /// The first line's words before the version.
    public static let formatName = "whereabouts-position-cache"
    /// The version written and read.
    public static let formatVersion = 1
    /// What a file of the cache is (``PositionCacheEntryProblem/fileKind``).
    public static var fileKind: String { PositionCacheEntryProblem.fileKind }

    /// The cache as text (see the format above).
    public func serialized() -> String {
        Self.textFormat.text(
            ofEntries: entries.map { entry in
                [entry.origin.rawValue]
                    + Self.textFormat.commonFields(
                        stored: entry.stored, latitude: entry.latitude, longitude: entry.longitude,
                        accuracy: entry.accuracy)
                    + entry.accessPoints.map { "\($0.bssid)=\($0.signal)" }
            })
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
        try read(text, now: now, capacity: capacity)
    }

    /// The header and the fields this format shares with the other caches': origin, then time, position and
    /// accuracy, then the access points.
    static let textFormat = CacheTextFormat<PositionCacheEntryProblem>(
        name: formatName, version: formatVersion, minimumFieldCount: 5)

    static func entry(_ line: CacheEntryLine<PositionCacheEntryProblem>) throws(PositionCacheFormatError)
        -> Entry
    {
        let fields = line.fields
        guard let origin = Origin(rawValue: fields[0]) else { throw line.failure(.unknownOrigin(fields[0])) }
        let common = try line.commonFields(from: 1) { accuracy in
            origin == .network
                ? accuracy > 0 && accuracy <= maximumAccuracy : accuracy >= 0 && accuracy < learnAccuracyBelow
        }
        let accessPointFields = fields.dropFirst(5)
        guard (AccessPointSelection.minimumForQuery...maximumAccessPointsPerEntry).contains(accessPointFields.count)
        else { throw line.failure(.accessPointCount(accessPointFields.count)) }
        var sightings: [AccessPointSighting] = []
        var seen: Set<BSSID> = []
        for field in accessPointFields {
            let parts = field.split(separator: "=", omittingEmptySubsequences: false)
            guard parts.count == 2, let bssid = BSSID(text: String(parts[0])), bssid.description == parts[0],
                let signal = Int(parts[1]),
                (AccessPointSelection.weakestSignal...AccessPointSelection.strongestSignal).contains(signal)
            else { throw line.failure(.invalidAccessPoint(field)) }
            guard seen.insert(bssid).inserted else { throw line.failure(.duplicateAccessPoint(bssid.description)) }
            sightings.append(AccessPointSighting(bssid: bssid, signal: signal))
        }
        return Entry(
            accessPoints: normalised(sightings), latitude: common.latitude, longitude: common.longitude,
            accuracy: common.accuracy, origin: origin, stored: common.stored)
    }
}
