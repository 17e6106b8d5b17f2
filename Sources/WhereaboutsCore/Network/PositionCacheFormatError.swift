/// Why a position cache file was refused, and on which line; the caller moves the file aside and starts empty.
///
/// Its ``description`` reads `line <n>: <problem>`.
public struct PositionCacheFormatError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public enum Problem: Sendable, Equatable, CustomStringConvertible {
        /// The first line is not `whereabouts-position-cache <version>`.
        case missingHeader
        /// The first line names a version this build does not read.
        case unsupportedVersion(String)
        /// A line is empty (only the text's last line break may be followed by nothing).
        case emptyLine
        /// An entry line has too few fields.
        case fieldCount(Int)
        /// The origin is neither `network` nor `learned`.
        case unknownOrigin(String)
        /// The time is not whole microseconds since 1970, 0 or more.
        case invalidTime(String)
        /// The latitude is not a finite number in −90…90.
        case invalidLatitude(String)
        /// The longitude is not a finite number in −180…180.
        case invalidLongitude(String)
        /// The accuracy is not a finite number in the range of its origin.
        case invalidAccuracy(String)
        /// An entry has fewer than two or more than ``PositionCache/maximumAccessPointsPerEntry`` access points.
        case accessPointCount(Int)
        /// An access point is not `aa:bb:cc:dd:ee:ff=<dBm>` with a signal in −100…−10.
        case invalidAccessPoint(String)
        /// An entry lists an address twice.
        case duplicateAccessPoint(String)

        /// A human explanation.
        public var description: String {
            switch self {
            case .missingHeader: "not a position cache: the first line is not 'whereabouts-position-cache 1'"
            case .unsupportedVersion(let version): "unsupported version \(shown(version))"
            case .emptyLine: "empty line"
            case .fieldCount(let count):
                "\(count) fields; an entry has origin, time, latitude, longitude, accuracy "
                    + "and access points"
            case .unknownOrigin(let text): "origin \(shown(text)) is neither 'network' nor 'learned'"
            case .invalidTime(let text): "time \(shown(text)) is not microseconds since 1970"
            case .invalidLatitude(let text): "latitude \(shown(text)) is not a number in -90...90"
            case .invalidLongitude(let text): "longitude \(shown(text)) is not a number in -180...180"
            case .invalidAccuracy(let text): "accuracy \(shown(text)) is out of range"
            case .accessPointCount(let count):
                "\(count) access points; an entry has 2 to \(PositionCache.maximumAccessPointsPerEntry)"
            case .invalidAccessPoint(let text): "access point \(shown(text)) is not aa:bb:cc:dd:ee:ff=<dBm -100...-10>"
            case .duplicateAccessPoint(let text): "access point \(text) is listed twice"
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
