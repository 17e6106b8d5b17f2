import WhereaboutsCore

/// A recorded track for replay: fixes in strictly increasing time order, loaded from GPX or NMEA.
///
/// **Order.** A fix not strictly later than the last one kept is dropped (and counted in ``droppedFixCount``):
/// a replay cannot go back in time, and a recording with a stray timestamp still plays.
///
/// **Speed and course.** Where a fix lacks them, they are derived from its neighbour: for every fix but the
/// first, from the previous fix to this one; for the first, from it to the second. Speed is great-circle
/// distance over elapsed time; course is the initial great-circle bearing, left unknown when the two positions
/// coincide. A single-fix track stays without either.
public struct Track: Sendable, Equatable {
    /// The format a track was read from.
    public enum Format: String, Sendable {
        /// GPS Exchange Format 1.0 or 1.1.
        case gpx
        /// NMEA 0183 sentences, one per line.
        case nmea
    }

    /// The file name (its last path component), for descriptions such as "Replay of walk.gpx".
    public let name: String
    /// The format the track was read from.
    public let format: Format
    /// The fixes, in strictly increasing timestamp order, with speed and course filled in where derivable.
    public let fixes: [Fix]
    /// How many fixes were dropped for not being later than their predecessor.
    public let droppedFixCount: Int
    /// How many NMEA lines failed to decode and were skipped (always 0 for GPX).
    public let skippedLineCount: Int

    /// A track from fixes in recording order.
    ///
    /// - Throws: ``TrackError/noPoints(fileName:)`` when `fixes` is empty.
    public init(name: String, format: Format, fixes: [Fix], skippedLineCount: Int = 0) throws(TrackError) {
        guard let first = fixes.first else { throw .noPoints(fileName: name) }
        var ordered = [first]
        ordered.reserveCapacity(fixes.count)
        for fix in fixes.dropFirst() where fix.timestamp > ordered[ordered.count - 1].timestamp {
            ordered.append(fix)
        }
        if ordered.count > 1 {
            for index in ordered.indices where ordered[index].speed == nil || ordered[index].course == nil {
                let (from, to) = index == 0 ? (ordered[0], ordered[1]) : (ordered[index - 1], ordered[index])
                let distance = from.distance(to: to)
                if ordered[index].speed == nil {
                    ordered[index].speed = distance / to.timestamp.since(from.timestamp).seconds
                }
                if ordered[index].course == nil, distance > 0 {
                    ordered[index].course = initialBearing(from.latitude, from.longitude, to.latitude, to.longitude)
                }
            }
        }
        self.name = name.split(separator: "/").last.map(String.init) ?? name
        self.format = format
        self.fixes = ordered
        self.droppedFixCount = fixes.count - ordered.count
        self.skippedLineCount = skippedLineCount
    }

    /// Reads a GPX or NMEA recording, telling them apart by content: GPX starts with `<` (after an optional
    /// byte-order mark and whitespace); otherwise the text is NMEA if any line starts with `$`. `fileName` names
    /// the track in descriptions and errors; only its last path component is kept.
    ///
    /// **GPX.** Track points are used; a file without any uses its route points, and one without those its
    /// waypoints. A point without `<time>` comes 1 s after the point before it; points before the first timed one
    /// come 1 s apart ending 1 s before it; a file without any time starts at the Unix epoch. Accuracy follows
    /// `<hdop>`/`<vdop>` as for NMEA (95%, UERE 4 m), assuming HDOP 2 when absent.
    ///
    /// **NMEA.** Lines are grouped into fixes by ``NMEAFixAssembler``. Empty lines and `#` comments are skipped;
    /// lines that fail to decode are skipped and counted, as a recording from a real serial line has some. A
    /// recording without RMC has no dates; its fixes are dated 1970-01-01, which a replay does not mind.
    ///
    /// - Throws: ``TrackError`` when the format is unrecognized, the GPX is malformed, or nothing playable is
    ///   found.
    public static func parse(text: String, fileName: String) throws(TrackError) -> Track {
        let text = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
        if text.utf8.first(where: { !isTrackWhitespace($0) }) == UInt8(ascii: "<") {
            return try parseGPX(text, fileName: fileName)
        }
        var previous: UInt8 = 0x0A
        for byte in text.utf8 {
            if byte == UInt8(ascii: "$"), previous == 0x0A || previous == 0x0D {
                return try parseNMEA(text, fileName: fileName)
            }
            previous = byte
        }
        throw .unrecognizedFormat(fileName: fileName)
    }

    private static func parseGPX(_ text: String, fileName: String) throws(TrackError) -> Track {
        let document: GPXDocument
        do {
            document = try GPXDocument(parsing: text)
        } catch {
            throw .gpx(fileName: fileName, error)
        }
        let points =
            !document.trackPoints.isEmpty
            ? document.trackPoints : !document.routePoints.isEmpty ? document.routePoints : document.waypoints
        guard !points.isEmpty else { throw .noPoints(fileName: fileName) }
        let firstTimed = points.firstIndex { $0.time != nil }
        var fixes: [Fix] = []
        fixes.reserveCapacity(points.count)
        for (index, point) in points.enumerated() {
            let timestamp: WallTime
            if let time = point.time {
                timestamp = time
            } else if index > 0 {
                timestamp = fixes[index - 1].timestamp.advanced(by: .seconds(1))
            } else if let firstTimed, let time = points[firstTimed].time {
                timestamp = time.advanced(by: .seconds(-firstTimed))
            } else {
                timestamp = WallTime(microseconds: 0)
            }
            fixes.append(Fix(point, timestamp: timestamp))
        }
        return try Track(name: fileName, format: .gpx, fixes: fixes)
    }

    private static func parseNMEA(_ text: String, fileName: String) throws(TrackError) -> Track {
        var assembler = NMEAFixAssembler(provider: .replay, isSimulated: true, fallbackDate: WallTime(seconds: 43_200))
        var fixes: [Fix] = []
        var skipped = 0
        var firstBad: (line: Int, error: NMEAError)?
        var lineNumber = 0
        for var line in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false) {
            lineNumber += 1
            if line.last == 0x0D { line = line.dropLast() }
            guard let first = line.first, first != UInt8(ascii: "#") else { continue }
            do {
                if let fix = try assembler.add(line: line) { fixes.append(fix) }
            } catch {
                skipped += 1
                if firstBad == nil { firstBad = (lineNumber, error) }
            }
        }
        if let fix = assembler.finish() { fixes.append(fix) }
        guard !fixes.isEmpty else {
            throw .noValidFixes(fileName: fileName, firstBadLine: firstBad?.line, error: firstBad?.error)
        }
        return try Track(name: fileName, format: .nmea, fixes: fixes, skippedLineCount: skipped)
    }
}

/// Whitespace that may precede a recording's first character.
private func isTrackWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
}

extension Fix {
    /// A replay fix from a GPX point, with accuracies from its DOPs (see ``Track/parse(text:fileName:)``).
    fileprivate init(_ point: GPXPoint, timestamp: WallTime) {
        let uere = AccuracyModel.autonomousUERE
        let hdop = point.hdop.flatMap { $0 > 0 ? $0 : nil } ?? AccuracyModel.assumedHDOP
        let vdop = point.elevation == nil ? nil : point.vdop.flatMap { $0 > 0 ? $0 : nil }
        self.init(
            latitude: point.latitude, longitude: point.longitude,
            horizontalAccuracy: AccuracyModel.horizontal(hdop: hdop, uere: uere),
            altitude: point.elevation,
            ellipsoidalAltitude: point.elevation.flatMap { elevation in point.geoidHeight.map { elevation + $0 } },
            verticalAccuracy: vdop.map { AccuracyModel.vertical(vdop: $0, uere: uere) },
            speed: point.speed, course: point.course, timestamp: timestamp, provider: .replay, description: "GPX",
            isSimulated: true)
    }
}
