import WhereaboutsCore

/// One point of a GPX file: a track point (`trkpt`), route point (`rtept`) or waypoint (`wpt`).
public struct GPXPoint: Sendable, Equatable {
    /// Degrees north, WGS84, from the `lat` attribute, in -90...90.
    public var latitude: Double
    /// Degrees east, WGS84, from the `lon` attribute, in -180...180.
    public var longitude: Double
    /// `<ele>`: metres above mean sea level.
    public var elevation: Double?
    /// `<geoidheight>`: height of the geoid above the WGS84 ellipsoid, in metres.
    public var geoidHeight: Double?
    /// `<time>`: when the point was recorded.
    public var time: WallTime?
    /// `<speed>` (GPX 1.0): metres per second, non-negative.
    public var speed: Double?
    /// `<course>` (GPX 1.0): degrees clockwise from true north, in 0..<360.
    public var course: Double?
    /// `<hdop>`: horizontal dilution of precision.
    public var hdop: Double?
    /// `<vdop>`: vertical dilution of precision.
    public var vdop: Double?
    /// The line of the point's start tag, for messages.
    public var line: Int

    /// A point at a position; the other fields are unset.
    public init(latitude: Double, longitude: Double, line: Int) {
        self.latitude = latitude
        self.longitude = longitude
        self.line = line
    }
}

/// The points of a GPX 1.0 or 1.1 document.
///
/// Only what a replay needs is read: the `lat`/`lon` attributes of `trkpt`, `rtept` and `wpt` and their
/// children `ele`, `time`, `speed`, `course`, `hdop`, `vdop` and `geoidheight`. Every other element, and
/// everything inside `<extensions>`, is ignored, though the whole text must still be well-formed XML whose
/// root is `gpx`. Namespace prefixes are ignored: `<gpx:trkpt>` is a `trkpt`. Numbers are `xsd:decimal` (no
/// exponent) with surrounding whitespace allowed. Times are `xsd:dateTime`: `2024-03-15T12:00:00Z`, optionally
/// with a fraction and with `+hh:mm`/`-hh:mm` in place of `Z`; a time without a zone is read as UTC, as GPX
/// prescribes. Parsing takes time linear in the size of the text.
public struct GPXDocument: Sendable, Equatable {
    /// The `wpt` elements, in document order.
    public var waypoints: [GPXPoint] = []
    /// The `rtept` elements of all routes, in document order.
    public var routePoints: [GPXPoint] = []
    /// The `trkpt` elements of all tracks and segments, in document order.
    public var trackPoints: [GPXPoint] = []

    /// Parses a GPX document.
    ///
    /// - Throws: ``GPXError``, with the line number, for malformed XML, a root other than `gpx`, a point without
    ///   `lat` or `lon`, an out-of-range or malformed number, or a malformed time.
    public init(parsing text: String) throws(GPXError) {
        var builder = Builder()
        var scanner = GPXXMLScanner(text)
        while let event = try scanner.next() {
            let line = scanner.eventLine
            switch event {
            case .start(let name, let attributes, let isEmpty):
                try builder.open(name, attributes: attributes, line: line)
                if isEmpty { try builder.close(name, line: line) }
            case .end(let name):
                try builder.close(name, line: line)
            case .text(let text):
                try builder.text(text, line: line)
            }
        }
        self = try builder.finish(line: scanner.line)
    }
}

extension GPXDocument {
    /// A document without points, for the builder to fill.
    fileprivate init() {}
}

/// The element names whose text a point takes.
private let pointFields: Set<String> = ["ele", "time", "speed", "course", "hdop", "vdop", "geoidheight"]

/// The local part of a possibly prefixed name.
private func localName(_ name: String) -> Substring {
    name.lastIndex(of: ":").map { name[name.index(after: $0)...] } ?? Substring(name)
}

/// Builds a ``GPXDocument`` from scanner events, checking nesting.
private struct Builder {
    var document = GPXDocument()
    /// Open elements, outermost first.
    var stack: [String] = []
    var sawRoot = false
    /// The stack depth of the open `<extensions>`, whose content is ignored.
    var extensionsDepth: Int?
    /// The open point, its kind (local name) and depth.
    var point: (point: GPXPoint, kind: Substring, depth: Int)?
    /// The open child of the point whose text is being collected.
    var field: (name: Substring, text: String, line: Int)?

    mutating func open(_ name: String, attributes: [(name: String, value: String)], line: Int) throws(GPXError) {
        if stack.isEmpty {
            guard !sawRoot else { throw GPXError(line: line, reason: .malformedXML("second root element <\(name)>")) }
            sawRoot = true
            guard localName(name) == "gpx" else { throw GPXError(line: line, reason: .notGPX(rootElement: name)) }
        }
        stack.append(name)
        guard extensionsDepth == nil else { return }
        let local = localName(name)
        if let field {
            throw GPXError(line: line, reason: .malformedXML("element <\(name)> inside <\(field.name)>"))
        }
        if local == "extensions" {
            extensionsDepth = stack.count
        } else if let point, stack.count == point.depth + 1, pointFields.contains(String(local)) {
            field = (local, "", line)
        } else if point == nil, local == "trkpt" || local == "rtept" || local == "wpt" {
            let latitude = try coordinate("lat", of: name, attributes, range: -90...90, line: line)
            let longitude = try coordinate("lon", of: name, attributes, range: -180...180, line: line)
            point = (GPXPoint(latitude: latitude, longitude: longitude, line: line), local, stack.count)
        }
    }

    mutating func close(_ name: String, line: Int) throws(GPXError) {
        guard let open = stack.last else {
            throw GPXError(line: line, reason: .malformedXML("end tag </\(name)> without a start tag"))
        }
        guard open == name else {
            throw GPXError(line: line, reason: .malformedXML("end tag </\(name)> does not match <\(open)>"))
        }
        let depth = stack.count
        stack.removeLast()
        if let extensions = extensionsDepth {
            if depth == extensions { extensionsDepth = nil }
            return
        }
        if let field, depth == (point?.depth ?? 0) + 1 {
            try apply(field)
            self.field = nil
        } else if let point, depth == point.depth {
            switch point.kind {
            case "trkpt": document.trackPoints.append(point.point)
            case "rtept": document.routePoints.append(point.point)
            default: document.waypoints.append(point.point)
            }
            self.point = nil
        }
    }

    mutating func text(_ text: String, line: Int) throws(GPXError) {
        if stack.isEmpty {
            if let junk = text.utf8.firstIndex(where: { !isXMLWhitespace($0) }) {
                let newlines = text.utf8[..<junk].count { $0 == 0x0A }
                throw GPXError(line: line + newlines, reason: .malformedXML("text outside the root element"))
            }
        } else if extensionsDepth == nil, field != nil {
            field?.text += text
        }
    }

    func finish(line: Int) throws(GPXError) -> GPXDocument {
        guard sawRoot else { throw GPXError(line: line, reason: .malformedXML("no root element")) }
        if let open = stack.last {
            throw GPXError(line: line, reason: .malformedXML("unexpected end of input inside <\(open)>"))
        }
        return document
    }

    private func coordinate(
        _ attribute: String, of element: String, _ attributes: [(name: String, value: String)],
        range: ClosedRange<Double>, line: Int
    ) throws(GPXError) -> Double {
        guard let text = attributes.first(where: { $0.name == attribute })?.value else {
            throw GPXError(line: line, reason: .missingAttribute(element: element, attribute: attribute))
        }
        guard let value = Lexical.decimal(trimmed(text)), range.contains(value) else {
            throw GPXError(line: line, reason: .invalidValue(field: attribute, value: GPXError.excerpt(text)))
        }
        return value
    }

    private mutating func apply(_ field: (name: Substring, text: String, line: Int)) throws(GPXError) {
        let text = trimmed(field.text)
        func number(_ range: PartialRangeFrom<Double>? = nil) throws(GPXError) -> Double {
            guard let value = Lexical.decimal(text), range?.contains(value) ?? true else {
                throw GPXError(
                    line: field.line, reason: .invalidValue(field: String(field.name), value: GPXError.excerpt(text)))
            }
            return value
        }
        switch field.name {
        case "ele":
            point?.point.elevation = try number()
        case "geoidheight":
            point?.point.geoidHeight = try number()
        case "speed":
            point?.point.speed = try number(0...)
        case "hdop":
            point?.point.hdop = try number(0...)
        case "vdop":
            point?.point.vdop = try number(0...)
        case "course":
            let course = try number(0...)
            guard course <= 360 else {
                throw GPXError(line: field.line, reason: .invalidValue(field: "course", value: GPXError.excerpt(text)))
            }
            point?.point.course = course == 360 ? 0 : course
        default:
            guard let time = parseDateTime(text) else {
                throw GPXError(line: field.line, reason: .invalidTime(GPXError.excerpt(text)))
            }
            point?.point.time = time
        }
    }
}

private func isXMLWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
}

/// The text without leading and trailing XML whitespace.
private func trimmed(_ text: String) -> Substring {
    let utf8 = text.utf8
    guard let first = utf8.firstIndex(where: { !isXMLWhitespace($0) }),
        let last = utf8.lastIndex(where: { !isXMLWhitespace($0) })
    else { return "" }
    return text[first...last]
}

/// Parses an `xsd:dateTime`: `YYYY-MM-DDThh:mm:ss`, an optional fraction, and `Z`, `±hh:mm` or no zone (UTC).
private func parseDateTime(_ text: Substring) -> WallTime? {
    let bytes = Array(text.utf8)
    func digits(_ range: Range<Int>) -> Int? { range.upperBound <= bytes.count ? Lexical.digits(bytes[range]) : nil }
    func isByte(_ index: Int, _ scalar: Unicode.Scalar) -> Bool {
        index < bytes.count && bytes[index] == UInt8(ascii: scalar)
    }
    guard let year = digits(0..<4), isByte(4, "-"), let month = digits(5..<7), isByte(7, "-"),
        let day = digits(8..<10), isByte(10, "T"), let hour = digits(11..<13), isByte(13, ":"),
        let minute = digits(14..<16), isByte(16, ":"), let second = digits(17..<19),
        year >= 1, CivilCalendar.isValidDate(year: year, month: month, day: day), hour < 24, minute < 60, second < 60
    else { return nil }
    var index = 19
    var fraction: Int64 = 0
    if isByte(index, ".") {
        let start = index + 1
        index = start
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        guard let value = Lexical.fractionMicroseconds(bytes[start..<index]) else { return nil }
        fraction = value
    }
    var offsetMinutes = 0
    if isByte(index, "Z") {
        index += 1
    } else if isByte(index, "+") || isByte(index, "-") {
        guard let offsetHour = digits((index + 1)..<(index + 3)), isByte(index + 3, ":"),
            let offsetMinute = digits((index + 4)..<(index + 6)), offsetHour <= 14, offsetMinute < 60
        else { return nil }
        offsetMinutes = (offsetHour * 60 + offsetMinute) * (isByte(index, "-") ? -1 : 1)
        index += 6
    }
    guard index == bytes.count else { return nil }
    let days = CivilCalendar.daysSinceEpoch(year: year, month: month, day: day)
    let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetMinutes * 60)
    return WallTime(microseconds: seconds * 1_000_000 + fraction)
}
