/// A fixed location, as GeoClue 2.7's static source reads it from `/etc/geolocation`.
public struct StaticLocation: Sendable, Equatable {
    /// Degrees north, WGS84, in -90...90.
    public var latitude: Double
    /// Degrees east, WGS84, in -180...180.
    public var longitude: Double
    /// Metres above mean sea level.
    public var altitude: Double
    /// Horizontal accuracy radius in metres, non-negative.
    public var accuracy: Double

    /// Makes a location; the values are taken as given (``StaticLocationFile/parse(_:file:)`` checks ranges).
    public init(latitude: Double, longitude: Double, altitude: Double, accuracy: Double) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.accuracy = accuracy
    }

    /// The location as a fix from the static provider, described as "Static location", measured at `timestamp`.
    ///
    /// GeoClue re-emits the static location with a fresh timestamp whenever a client starts, so callers pass
    /// the current time.
    public func fix(at timestamp: WallTime) -> Fix {
        Fix(
            latitude: latitude, longitude: longitude, horizontalAccuracy: accuracy, altitude: altitude,
            timestamp: timestamp, provider: .static, description: "Static location")
    }
}

/// The parser for GeoClue 2.7's static location file, `/etc/geolocation`.
///
/// The file holds four numbers, one per line, in this order: latitude (degrees), longitude (degrees), altitude
/// (metres) and accuracy (metres). `#` starts a comment that runs to the end of the line, whether the line
/// holds a value or not; blank lines and whitespace around values are ignored; CRLF line ends are accepted.
///
/// GeoClue stops reading after the fourth value and checks no ranges. Whereabouts is stricter: a fifth value, a
/// value that is not a finite number, and a coordinate or accuracy out of range are errors that name the line.
public enum StaticLocationFile {
    /// Parses the text of a static location file; `file` names it in errors.
    public static func parse(_ text: String, file: String) throws(StaticLocationError) -> StaticLocation {
        var values: [Double] = []
        let lines = splitLines(text)
        for (offset, rawLine) in lines.enumerated() {
            let lineNumber = offset + 1
            let uncommented = rawLine.utf8.firstIndex(of: UInt8(ascii: "#")).map { Substring(rawLine.utf8[..<$0]) }
            let content = trimmingASCIIWhitespace(uncommented ?? rawLine)
            guard !content.isEmpty else { continue }
            guard let field = StaticLocationError.Field(rawValue: values.count) else {
                throw StaticLocationError(file: file, line: lineNumber, problem: .tooManyValues(String(content)))
            }
            values.append(try value(String(content), field: field, file: file, line: lineNumber))
        }
        guard values.count == 4 else {
            // A text that ends with a newline has an empty last "line" that is not a line of the file.
            let lastLine = max(1, lines.last?.isEmpty == true ? lines.count - 1 : lines.count)
            throw StaticLocationError(file: file, line: lastLine, problem: .tooFewValues(found: values.count))
        }
        return StaticLocation(latitude: values[0], longitude: values[1], altitude: values[2], accuracy: values[3])
    }

    /// Reads one value and checks it against its field's range.
    private static func value(_ text: String, field: StaticLocationError.Field, file: String, line: Int)
        throws(StaticLocationError) -> Double
    {
        guard let value = Double(text) else {
            throw StaticLocationError(file: file, line: line, problem: .notANumber(field, text))
        }
        guard value.isFinite else {
            throw StaticLocationError(file: file, line: line, problem: .notFinite(field, text))
        }
        if let range = field.range, !range.contains(value) {
            throw StaticLocationError(file: file, line: line, problem: .outOfRange(field, text))
        }
        return value
    }
}

/// Why a static location file was refused, and where.
public struct StaticLocationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The four values of the file, in file order.
    public enum Field: Int, Sendable, Equatable, CaseIterable, CustomStringConvertible {
        /// The first value, degrees north.
        case latitude
        /// The second value, degrees east.
        case longitude
        /// The third value, metres above mean sea level.
        case altitude
        /// The fourth value, the accuracy radius in metres.
        case accuracy

        /// The values the field accepts; `nil` when any finite number will do.
        public var range: ClosedRange<Double>? {
            switch self {
            case .latitude: -90...90
            case .longitude: -180...180
            case .altitude: nil
            case .accuracy: 0...Double.greatestFiniteMagnitude
            }
        }

        /// The field's name and unit, e.g. "latitude (degrees, -90 to 90)".
        public var description: String {
            switch self {
            case .latitude: "latitude (degrees, -90 to 90)"
            case .longitude: "longitude (degrees, -180 to 180)"
            case .altitude: "altitude (metres)"
            case .accuracy: "accuracy (metres, 0 or more)"
            }
        }
    }

    /// What is wrong.
    public enum Problem: Sendable, Equatable, CustomStringConvertible {
        /// The file ends after `found` values; it needs four.
        case tooFewValues(found: Int)
        /// A fifth value (given) follows the accuracy.
        case tooManyValues(String)
        /// The text given for the field is not a number.
        case notANumber(Field, String)
        /// The text given for the field is NaN or infinite.
        case notFinite(Field, String)
        /// The number given for the field is outside its range.
        case outOfRange(Field, String)

        /// A human explanation.
        public var description: String {
            switch self {
            case .tooFewValues(let found):
                let missing = Field.allCases.dropFirst(found).map { "\($0)" }.joined(separator: ", ")
                return "too few values: found \(found) of 4, missing \(missing); the file holds latitude, longitude, "
                    + "altitude and accuracy, one per line"
            case .tooManyValues(let text):
                return "too many values: \(quoted(text)) follows the accuracy; the file holds exactly 4 values"
            case .notANumber(let field, let text):
                return "\(field): \(quoted(text)) is not a number (one value per line)"
            case .notFinite(let field, let text):
                return "\(field): \(quoted(text)) is not a finite number"
            case .outOfRange(let field, let text):
                return "\(field): \(quoted(text)) is out of range"
            }
        }
    }

    /// The file name given to the parser.
    public var file: String
    /// The 1-based line number: the line of the bad value, or the last line when values are missing.
    public var line: Int
    /// What is wrong.
    public var problem: Problem

    /// Makes an error.
    public init(file: String, line: Int, problem: Problem) {
        self.file = file
        self.line = line
        self.problem = problem
    }

    /// `<file>:<line>: <problem>`.
    public var description: String {
        locatedMessage(file: file, line: line, group: nil, key: nil, problem: problem.description)
    }
}
