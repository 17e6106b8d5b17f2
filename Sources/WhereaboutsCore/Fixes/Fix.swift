/// Where a fix came from.
///
/// Reported by `io.github.whereabouts1.Location.Provider` and, as text, in
/// `org.freedesktop.GeoClue2.Location.Description`.
public enum ProviderKind: String, Sendable, CaseIterable {
    case `static` = "static"
    case replay = "replay"
    case gpsd = "gpsd"
    case nmea = "nmea"
    /// Wi-Fi positioning: the access points around the machine, looked up or remembered.
    case wifi = "wifi"
    /// IP positioning: the machine's public address, looked up.
    case ip = "ip"
    /// The compass iio-sensor-proxy serves: no positions, only the headings put on other providers' fixes.
    case compass = "compass"
    /// The modem's satellite receiver, through ModemManager.
    case modemGNSS = "modem-gnss"
    /// Cell positioning: the mobile network cells the modems are on, looked up.
    case cell = "cell"
    /// The CDMA base station a modem is on, by its own position.
    case cdma = "cdma"
}

/// A number a source may not give, kept in 8 bytes with NaN for unknown where `Double?` takes 16 in a struct: a
/// client keeps several fixes. A NaN set is unknown, as it stands for.
@propertyWrapper
public struct UnknownAsNaN: Sendable, Equatable {
    private var stored: Double

    public init(wrappedValue: Double?) { stored = wrappedValue ?? .nan }

    public var wrappedValue: Double? {
        get { stored.isNaN ? nil : stored }
        set { stored = newValue ?? .nan }
    }

    public static func == (lhs: UnknownAsNaN, rhs: UnknownAsNaN) -> Bool { lhs.wrappedValue == rhs.wrappedValue }
}

/// One position report, as a provider produced it.
///
/// Every accuracy is a radius or spread at **95% confidence**, in metres (or metres per second, or degrees),
/// the convention of gpsd and the W3C Geolocation API. A value that the source did not give is `nil`;
/// the D-Bus layer turns `nil` into GeoClue's sentinels where GeoClue's interface needs a value. (Unknown values
/// are kept as NaN inside, ``UnknownAsNaN``; a NaN given for one reads back as `nil`.)
public struct Fix: Sendable, Equatable {
    /// Degrees north, WGS84, in -90...90.
    public var latitude: Double
    /// Degrees east, WGS84, in -180...180.
    public var longitude: Double
    /// Horizontal radius at 95% confidence, in metres; always finite and non-negative.
    public var horizontalAccuracy: Double
    /// Metres above mean sea level.
    @UnknownAsNaN public var altitude: Double?
    /// Metres above the WGS84 ellipsoid.
    @UnknownAsNaN public var ellipsoidalAltitude: Double?
    /// Vertical accuracy at 95% confidence, in metres.
    @UnknownAsNaN public var verticalAccuracy: Double?
    /// Ground speed in metres per second.
    @UnknownAsNaN public var speed: Double?
    /// Speed accuracy at 95% confidence, in metres per second.
    @UnknownAsNaN public var speedAccuracy: Double?
    /// Direction of travel, degrees clockwise from true north, in 0..<360.
    @UnknownAsNaN public var course: Double?
    /// Course accuracy at 95% confidence, in degrees.
    @UnknownAsNaN public var courseAccuracy: Double?
    /// Vertical speed in metres per second, positive upwards.
    @UnknownAsNaN public var climb: Double?
    /// Vertical speed accuracy at 95% confidence, in metres per second.
    @UnknownAsNaN public var climbAccuracy: Double?
    /// Where the device points, degrees clockwise from magnetic north, in 0..<360, from a compass; unlike
    /// ``course``, which is where it moves.
    @UnknownAsNaN public var magneticHeading: Double?
    /// ``magneticHeading`` turned to true north by the magnetic declination at the fix's place and date
    /// (``HeadingCorrection``), in 0..<360.
    @UnknownAsNaN public var trueHeading: Double?
    /// Heading accuracy at 95% confidence, in degrees (``HeadingCorrection`` says what figure and why).
    @UnknownAsNaN public var headingAccuracy: Double?
    /// The kind of satellite fix; ``FixType/none`` for a position from elsewhere (`Location.FixType`).
    public var fixType: FixType
    /// The receiver's horizontal dilution of precision (`Location.HDOP`).
    @UnknownAsNaN public var hdop: Double?
    /// The receiver's vertical dilution of precision (`Location.VDOP`).
    @UnknownAsNaN public var vdop: Double?
    /// The receiver's position (3D) dilution of precision (`Location.PDOP`).
    @UnknownAsNaN public var pdop: Double?
    /// When the position was measured.
    public var timestamp: WallTime
    /// The kind of provider that produced the fix.
    public var provider: ProviderKind
    /// A short human description of the source, e.g. "Static location" or "Replay of track.gpx".
    public var description: String
    /// True when the fix was not measured but played back or injected.
    public var isSimulated: Bool

    public init(
        latitude: Double, longitude: Double, horizontalAccuracy: Double,
        altitude: Double? = nil, ellipsoidalAltitude: Double? = nil, verticalAccuracy: Double? = nil,
        speed: Double? = nil, speedAccuracy: Double? = nil, course: Double? = nil, courseAccuracy: Double? = nil,
        climb: Double? = nil, climbAccuracy: Double? = nil, magneticHeading: Double? = nil, trueHeading: Double? = nil,
        headingAccuracy: Double? = nil, fixType: FixType = .none, hdop: Double? = nil, vdop: Double? = nil,
        pdop: Double? = nil, timestamp: WallTime, provider: ProviderKind, description: String, isSimulated: Bool = false
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.horizontalAccuracy = horizontalAccuracy
        self.altitude = altitude
        self.ellipsoidalAltitude = ellipsoidalAltitude
        self.verticalAccuracy = verticalAccuracy
        self.speed = speed
        self.speedAccuracy = speedAccuracy
        self.course = course
        self.courseAccuracy = courseAccuracy
        self.climb = climb
        self.climbAccuracy = climbAccuracy
        self.magneticHeading = magneticHeading
        self.trueHeading = trueHeading
        self.headingAccuracy = headingAccuracy
        self.fixType = fixType
        self.hdop = hdop
        self.vdop = vdop
        self.pdop = pdop
        self.timestamp = timestamp
        self.provider = provider
        self.description = description
        self.isSimulated = isSimulated
    }

    /// The great-circle distance to `other`, in metres (haversine, mean Earth radius).
    public func distance(to other: Fix) -> Double {
        greatCircleDistance(latitude, longitude, other.latitude, other.longitude)
    }
}

/// The great-circle distance between two WGS84 positions in degrees, in metres.
public func greatCircleDistance(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
    let radians = Double.pi / 180
    let dLat = (lat2 - lat1) * radians
    let dLon = (lon2 - lon1) * radians
    let a = sinHalfSquared(dLat) + cosine(lat1 * radians) * cosine(lat2 * radians) * sinHalfSquared(dLon)
    return 2 * meanEarthRadius * arcsine(min(1, a.squareRoot()))
}

/// The mean Earth radius in metres (IUGG).
public let meanEarthRadius = 6_371_008.8
