/// Why a recorded track cannot be loaded or played.
public enum TrackError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is neither GPX (it would start with `<`) nor NMEA (it would have a line starting with `$`).
    case unrecognizedFormat(fileName: String)
    /// The GPX document is malformed.
    case gpx(fileName: String, GPXError)
    /// The track has no points.
    case noPoints(fileName: String)
    /// An NMEA recording yields no valid fix. When some lines failed to decode, the first of them is given.
    case noValidFixes(fileName: String, firstBadLine: Int?, error: NMEAError?)
    /// The playback speed is not a finite number above zero.
    case invalidSpeed(Double)
    /// One pass of the track would last longer than ``ReplaySchedule/maximumLoopDuration`` at this speed.
    case playbackTooLong(fileName: String, speed: Double)

    /// The problem in one line of English, prefixed with the file name, for logs.
    public var description: String {
        switch self {
        case .unrecognizedFormat(let fileName):
            "\(fileName): neither GPX nor NMEA"
        case .gpx(let fileName, let error):
            "\(fileName): \(error)"
        case .noPoints(let fileName):
            "\(fileName): no points"
        case .noValidFixes(let fileName, let line?, let error?):
            "\(fileName): no valid fix; first bad line \(line): \(error)"
        case .noValidFixes(let fileName, _, _):
            "\(fileName): no valid fix (the receiver reported no position)"
        case .invalidSpeed(let speed):
            "playback speed \(speed) is not a number above zero"
        case .playbackTooLong(let fileName, let speed):
            "\(fileName): one pass at speed \(speed) would take longer than 100 years"
        }
    }
}
