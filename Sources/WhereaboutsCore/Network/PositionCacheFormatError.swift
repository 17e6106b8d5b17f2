/// Why a position cache file was refused, and on which line: `line <n>: <problem>`. The caller moves the file aside
/// and starts empty.
public typealias PositionCacheFormatError = LineError<CacheLineProblem<PositionCacheEntryProblem>>

/// What is wrong with a position cache entry's fields other than its time, position and accuracy.
public enum PositionCacheEntryProblem: CacheEntryProblem {
    /// The origin is neither `network` nor `learned`.
    case unknownOrigin(String)
    /// An entry has fewer than two or more than ``PositionCache/maximumAccessPointsPerEntry`` access points.
    case accessPointCount(Int)
    /// An access point is not `aa:bb:cc:dd:ee:ff=<dBm>` with a signal in −100…−10.
    case invalidAccessPoint(String)
    /// An entry lists an address twice.
    case duplicateAccessPoint(String)

    /// `position cache`.
    public static let fileKind = "position cache"
    /// ``PositionCache/formatName`` and ``PositionCache/formatVersion``.
    public static let header = "\(PositionCache.formatName) \(PositionCache.formatVersion)"
    /// Origin, time, latitude, longitude, accuracy and access points.
    public static let entryFields = "origin, time, latitude, longitude, accuracy and access points"

    /// A human explanation.
    public var description: String {
        switch self {
        case .unknownOrigin(let text): "origin \(shortQuoted(text)) is neither 'network' nor 'learned'"
        case .accessPointCount(let count):
            "\(count) access points; an entry has 2 to \(PositionCache.maximumAccessPointsPerEntry)"
        case .invalidAccessPoint(let text):
            "access point \(shortQuoted(text)) is not aa:bb:cc:dd:ee:ff=<dBm -100...-10>"
        case .duplicateAccessPoint(let text): "access point \(text) is listed twice"
        }
    }
}
