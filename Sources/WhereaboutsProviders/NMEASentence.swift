/// One NMEA 0183 sentence, checked and decoded.
///
/// Decoding is strict. A sentence starts with `$`, holds only printable ASCII, and ends with `*HH`, the XOR of
/// the bytes between `$` and `*` in hexadecimal (either case is accepted). One line terminator (CR LF, LF or
/// CR) may follow. The talker may be anything (`GP`, `GN`, `GL`, `GA`, `BD`, ...). GGA, RMC, GSA, GSV, GST and
/// VTG are decoded with their fields' syntax and ranges checked; every other type, including proprietary `$P...`
/// sentences, passes its framing checks and becomes ``Content-swift.enum/unsupported``.
public struct NMEASentence: Sendable, Equatable {
    /// The longest line accepted, in characters from `$` to the checksum.
    ///
    /// NMEA 0183 caps a sentence at 82 characters including CR LF, that is 80 here. Real receivers exceed that
    /// (u-blox GSV and multi-constellation GSA with extra fields, high-precision coordinates), so 120 are
    /// accepted: enough for every sentence seen in practice, small enough that a line splitter can bound its
    /// buffer.
    public static let maximumLength = 120

    /// The talker identifier: `GP`, `GN`, `GL`, ..., or `P` for a proprietary sentence.
    public var talker: String
    /// The sentence type, such as `GGA`; for a proprietary sentence, the manufacturer code and what follows.
    public var type: String
    /// The decoded fields.
    public var content: Content

    /// What a sentence says, for the types Whereabouts reads.
    public enum Content: Sendable, Equatable {
        /// Global positioning system fix data.
        case gga(GGA)
        /// Recommended minimum specific GNSS data.
        case rmc(RMC)
        /// DOP and active satellites.
        case gsa(GSA)
        /// Satellites in view: one part of a sequence.
        case gsv(GSV)
        /// Pseudorange error statistics.
        case gst(GST)
        /// Course over ground and ground speed.
        case vtg(VTG)
        /// A well-formed sentence of a type Whereabouts does not read.
        case unsupported
    }

    /// A latitude and longitude in degrees, WGS84.
    public struct Position: Sendable, Equatable {
        /// Degrees north, in -90...90.
        public var latitude: Double
        /// Degrees east, in -180...180.
        public var longitude: Double

        /// A position from degrees.
        public init(latitude: Double, longitude: Double) {
            self.latitude = latitude
            self.longitude = longitude
        }
    }

    /// GGA: the position, its quality and altitude.
    public struct GGA: Sendable, Equatable {
        /// UTC time of the position; absent only when there is no fix.
        public var time: NMEATimeOfDay?
        /// The position; absent exactly when `quality` is 0.
        public var position: Position?
        /// The fix quality: 0 no fix, 1 autonomous, 2 differential, 3 PPS, 4 RTK fixed, 5 RTK float,
        /// 6 estimated, 7 manual, 8 simulated.
        public var quality: Int
        /// Satellites used in the fix.
        public var satellitesInUse: Int?
        /// Horizontal dilution of precision.
        public var hdop: Double?
        /// Antenna altitude above mean sea level (the geoid), in metres.
        public var altitude: Double?
        /// Height of the geoid above the WGS84 ellipsoid, in metres.
        public var geoidSeparation: Double?
    }

    /// RMC: position, speed, course and date.
    public struct RMC: Sendable, Equatable {
        /// UTC time of the position; absent only when the sentence is not valid.
        public var time: NMEATimeOfDay?
        /// True when the status is `A` and the mode indicator (NMEA 2.3 and later), if present, is not `N`.
        public var isValid: Bool
        /// The position; always present when `isValid`.
        public var position: Position?
        /// Speed over ground in metres per second, converted from knots.
        public var speed: Double?
        /// Course over ground, degrees clockwise from true north, in 0..<360.
        public var course: Double?
        /// UTC date of the position.
        public var date: NMEADate?
    }

    /// GSA: the fix mode, the satellites used and dilutions of precision.
    public struct GSA: Sendable, Equatable {
        /// 1 no fix, 2 two-dimensional, 3 three-dimensional.
        public var fixMode: Int
        /// The numbers of the satellites used in the fix, as the talker numbers them (``NMEASatelliteNumbering``).
        public var satellitesUsed: [Int]
        /// The GNSS system id (NMEA 4.11): 1 GPS, 2 GLONASS, 3 Galileo, 4 BeiDou, 5 QZSS, 6 NavIC; nil before 4.11.
        public var systemID: Int?
        /// Position dilution of precision.
        public var pdop: Double?
        /// Horizontal dilution of precision.
        public var hdop: Double?
        /// Vertical dilution of precision.
        public var vdop: Double?
    }

    /// GSV: one part of a sequence listing the satellites in view, at most four a part.
    public struct GSV: Sendable, Equatable {
        /// How many parts the sequence has, 1...9.
        public var partCount: Int
        /// Which part this is, 1...``partCount``.
        public var partNumber: Int
        /// How many satellites the whole sequence lists.
        public var satellitesInView: Int
        /// The satellites this part lists; empty padding groups are left out.
        public var satellites: [InView]
        /// The signal id (NMEA 4.10), one hexadecimal digit: which of a satellite's signals the sequence is about.
        public var signalID: Int?

        /// One satellite of a GSV part.
        public struct InView: Sendable, Equatable {
            /// Its number as the talker numbers it (``NMEASatelliteNumbering``).
            public var number: Int
            /// Degrees above the horizon, 0...90.
            public var elevation: Double?
            /// Degrees clockwise from true north, in 0..<360.
            public var azimuth: Double?
            /// C/N0 in dB-Hz, 0...99; nil while not tracked.
            public var signalStrength: Double?
        }
    }

    /// GST: standard deviations (1σ) of the position errors, in metres.
    public struct GST: Sendable, Equatable {
        /// UTC time of the position the statistics describe.
        public var time: NMEATimeOfDay?
        /// RMS of the pseudorange residuals, in metres.
        public var rangeResidualRMS: Double?
        /// 1σ of the latitude error, in metres.
        public var sigmaLatitude: Double?
        /// 1σ of the longitude error, in metres.
        public var sigmaLongitude: Double?
        /// 1σ of the altitude error, in metres.
        public var sigmaAltitude: Double?
    }

    /// VTG: course and speed over ground.
    public struct VTG: Sendable, Equatable {
        /// False when the mode indicator (NMEA 2.3 and later) is `N`, data not valid.
        public var isValid: Bool
        /// Course over ground, degrees clockwise from true north, in 0..<360.
        public var course: Double?
        /// Speed over ground in metres per second, from the knots field or else the km/h field.
        public var speed: Double?
    }

    /// Decodes one line given as text; see the byte version below.
    public init(parsing line: some StringProtocol) throws(NMEAError) {
        try self.init(parsing: line.utf8)
    }

    /// Decodes one line given as bytes, as read from a file, serial port or socket.
    ///
    /// - Throws: ``NMEAError`` for anything but a well-formed sentence with a matching checksum and, for the
    ///   decoded types, valid fields.
    public init(parsing bytes: some Collection<UInt8>) throws(NMEAError) {
        let rawCount = bytes.count
        guard rawCount <= Self.maximumLength + 2 else {
            throw .tooLong(length: rawCount, limit: Self.maximumLength)
        }
        var line = Array(bytes)
        if line.last == 0x0A { line.removeLast() }
        if line.last == 0x0D { line.removeLast() }
        guard !line.isEmpty else { throw .empty }
        guard line.count <= Self.maximumLength else { throw .tooLong(length: line.count, limit: Self.maximumLength) }
        guard line[0] == UInt8(ascii: "$") else { throw .missingStartDelimiter }

        var star: Int?
        var computed: UInt8 = 0
        for offset in 1..<line.count {
            let byte = line[offset]
            guard byte >= 0x20, byte <= 0x7E, byte != UInt8(ascii: "$") else {
                throw .invalidCharacter(byte: byte, offset: offset)
            }
            if star != nil {
                continue
            } else if byte == UInt8(ascii: "*") {
                star = offset
            } else {
                computed ^= byte
            }
        }
        guard let star else { throw .missingChecksum }
        let checksumBytes = line[(star + 1)...]
        guard checksumBytes.count == 2, let high = hexValue(checksumBytes.first!),
            let low = hexValue(checksumBytes.last!)
        else {
            throw .malformedChecksum(String(decoding: checksumBytes, as: UTF8.self))
        }
        let stated = high << 4 | low
        guard stated == computed else { throw .checksumMismatch(stated: stated, computed: computed) }

        let body = String(decoding: line[1..<star], as: UTF8.self)
        let fields = body.split(separator: ",", omittingEmptySubsequences: false)
        let address = fields[0]
        guard address.utf8.allSatisfy(isAddressCharacter) else { throw .malformedAddress(String(address)) }
        if address.first == "P", address.count >= 2 {
            talker = "P"
            type = String(address.dropFirst())
            content = .unsupported
            return
        }
        guard address.count == 5 else { throw .malformedAddress(String(address)) }
        talker = String(address.prefix(2))
        type = String(address.suffix(3))
        let values = Array(fields.dropFirst())
        switch type {
        case "GGA": content = .gga(try GGA(NMEAFields(sentence: type, values: values, required: 14)))
        case "RMC": content = .rmc(try RMC(NMEAFields(sentence: type, values: values, required: 11)))
        case "GSA": content = .gsa(try GSA(NMEAFields(sentence: type, values: values, required: 17)))
        case "GSV": content = .gsv(try GSV(NMEAFields(sentence: type, values: values, required: 3)))
        case "GST": content = .gst(try GST(NMEAFields(sentence: type, values: values, required: 8)))
        case "VTG": content = .vtg(try VTG(NMEAFields(sentence: type, values: values, required: 8)))
        default: content = .unsupported
        }
    }
}

/// Whether a byte may appear in an address field: uppercase letters and digits.
private func isAddressCharacter(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
}

/// The value of one hexadecimal digit, either case.
private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    default: nil
    }
}

/// Knots to metres per second: one knot is 1852 m per hour.
private let metresPerSecondPerKnot = 1852.0 / 3600.0

extension NMEASentence.GGA {
    /// Field layout: time, lat, N/S, lon, E/W, quality, satellites, HDOP, altitude, M, separation, M,
    /// DGPS age, DGPS station.
    init(_ fields: NMEAFields) throws(NMEAError) {
        guard let quality = try fields.integer(5, "fix quality", in: 0...8) else {
            throw .missingField(sentence: fields.sentence, field: "fix quality")
        }
        self.quality = quality
        time = try fields.time(0)
        position = try fields.position(latitude: 1, longitude: 3)
        satellitesInUse = try fields.integer(6, "satellite count", in: 0...99)
        hdop = try fields.decimal(7, "HDOP", in: 0...)
        altitude = try fields.decimal(8, "altitude")
        try fields.unit(9, "M", "altitude unit", for: altitude)
        geoidSeparation = try fields.decimal(10, "geoid separation")
        try fields.unit(11, "M", "geoid separation unit", for: geoidSeparation)
        if quality > 0 {
            guard time != nil else { throw .missingField(sentence: fields.sentence, field: "time") }
            guard position != nil else { throw .missingField(sentence: fields.sentence, field: "position") }
        } else {
            position = nil
        }
    }
}

extension NMEASentence.RMC {
    /// Field layout: time, status, lat, N/S, lon, E/W, speed (knots), course, date, magnetic variation, E/W,
    /// then optionally the mode indicator (2.3) and navigational status (4.1).
    init(_ fields: NMEAFields) throws(NMEAError) {
        guard let status = try fields.letter(1, "status", from: "AV") else {
            throw .missingField(sentence: fields.sentence, field: "status")
        }
        let mode = try fields.letter(11, "mode indicator", from: "ADEFMNPRS")
        isValid = status == "A" && mode != "N"
        time = try fields.time(0)
        position = try fields.position(latitude: 2, longitude: 4)
        speed = try fields.decimal(6, "speed", in: 0...).map { $0 * metresPerSecondPerKnot }
        course = try fields.course(7)
        date = try fields.date(8)
        _ = try fields.decimal(9, "magnetic variation", in: 0...180)
        if isValid {
            guard time != nil else { throw .missingField(sentence: fields.sentence, field: "time") }
            guard position != nil else { throw .missingField(sentence: fields.sentence, field: "position") }
        }
    }
}

extension NMEASentence.GSA {
    /// Field layout: selection mode (M/A), fix mode, twelve satellite ids, PDOP, HDOP, VDOP, then optionally
    /// the system id (4.1).
    init(_ fields: NMEAFields) throws(NMEAError) {
        _ = try fields.letter(0, "selection mode", from: "MA")
        guard let fixMode = try fields.integer(1, "fix mode", in: 1...3) else {
            throw .missingField(sentence: fields.sentence, field: "fix mode")
        }
        self.fixMode = fixMode
        var used: [Int] = []
        for index in 2...13 {
            if let number = try fields.integer(index, "satellite number", in: 1...999) { used.append(number) }
        }
        satellitesUsed = used
        systemID = try fields.hexDigit(17, "system id")
        pdop = try fields.decimal(14, "PDOP", in: 0...)
        hdop = try fields.decimal(15, "HDOP", in: 0...)
        vdop = try fields.decimal(16, "VDOP", in: 0...)
    }
}

extension NMEASentence.GSV {
    /// Field layout: part count, part number, satellites in view, then up to four groups of number, elevation,
    /// azimuth and C/N0, then optionally the signal id (4.10). A part may not list more satellites than the
    /// sequence has (``NMEASkyAssembler`` holds the whole sequence to that count), nor be numbered past the part
    /// count.
    init(_ fields: NMEAFields) throws(NMEAError) {
        guard let partCount = try fields.integer(0, "part count", in: 1...9) else {
            throw .missingField(sentence: fields.sentence, field: "part count")
        }
        guard let partNumber = try fields.integer(1, "part number", in: 1...partCount) else {
            throw .missingField(sentence: fields.sentence, field: "part number")
        }
        guard let satellitesInView = try fields.integer(2, "satellites in view", in: 0...99) else {
            throw .missingField(sentence: fields.sentence, field: "satellites in view")
        }
        self.partCount = partCount
        self.partNumber = partNumber
        self.satellitesInView = satellitesInView
        let trailing = fields.values.count - 3
        let groups = trailing / 4
        guard groups <= 4, trailing % 4 <= 1 else {
            throw .invalidField(sentence: fields.sentence, field: "field count", value: String(fields.values.count))
        }
        signalID = trailing % 4 == 1 ? try fields.hexDigit(fields.values.count - 1, "signal id") : nil
        var satellites: [InView] = []
        for group in 0..<groups {
            let first = 3 + group * 4
            let number = try fields.integer(first, "satellite number", in: 1...999)
            let elevation = try fields.decimal(first + 1, "elevation", in: 0...90)
            let azimuth = try fields.decimal(first + 2, "azimuth", in: 0...360).map { $0 == 360 ? 0 : $0 }
            let signalStrength = try fields.decimal(first + 3, "C/N0", in: 0...99)
            guard let number else {
                guard elevation == nil, azimuth == nil, signalStrength == nil else {
                    throw .missingField(sentence: fields.sentence, field: "satellite number")
                }
                continue
            }
            satellites.append(
                InView(number: number, elevation: elevation, azimuth: azimuth, signalStrength: signalStrength))
        }
        guard satellites.count <= satellitesInView else {
            throw .invalidField(
                sentence: fields.sentence, field: "satellite count", value: String(satellites.count))
        }
        self.satellites = satellites
    }
}

extension NMEASentence.GST {
    /// Field layout: time, range residual RMS, error ellipse semi-major σ, semi-minor σ and orientation,
    /// latitude σ, longitude σ, altitude σ.
    init(_ fields: NMEAFields) throws(NMEAError) {
        time = try fields.time(0)
        rangeResidualRMS = try fields.decimal(1, "range residual RMS", in: 0...)
        _ = try fields.decimal(2, "semi-major axis error", in: 0...)
        _ = try fields.decimal(3, "semi-minor axis error", in: 0...)
        _ = try fields.decimal(4, "error ellipse orientation", in: 0...360)
        sigmaLatitude = try fields.decimal(5, "latitude error", in: 0...)
        sigmaLongitude = try fields.decimal(6, "longitude error", in: 0...)
        sigmaAltitude = try fields.decimal(7, "altitude error", in: 0...)
    }
}

extension NMEASentence.VTG {
    /// Field layout: course true, T, course magnetic, M, speed, N (knots), speed, K (km/h), then optionally the
    /// mode indicator (2.3).
    init(_ fields: NMEAFields) throws(NMEAError) {
        course = try fields.course(0)
        _ = try fields.decimal(2, "magnetic course", in: 0...360)
        let knots = try fields.decimal(4, "speed in knots", in: 0...)
        let kilometresPerHour = try fields.decimal(6, "speed in km/h", in: 0...)
        speed = knots.map { $0 * metresPerSecondPerKnot } ?? kilometresPerHour.map { $0 / 3.6 }
        isValid = try fields.letter(8, "mode indicator", from: "ADEFMNPRS") != "N"
    }
}
