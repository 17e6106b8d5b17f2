/// One location fix as an app receives it, in the position format of the seed API (field for field).
///
/// Unknown values are `nil` (JSON `null`); GeoClue's sentinels (`-DBL_MAX` altitude, `-1` speed) never leak
/// through. Accuracies are at 95% confidence.
public struct Position: Sendable, Equatable, Codable {
    /// Degrees north (WGS84).
    public var latitude: Double
    /// Degrees east (WGS84).
    public var longitude: Double
    /// Metres above mean sea level.
    public var altitude: Double?
    /// Radius of uncertainty, metres.
    public var horizontalAccuracy: Double
    /// Altitude uncertainty, metres.
    public var verticalAccuracy: Double?
    /// Direction of travel, degrees clockwise from true north.
    public var course: Double?
    /// Metres per second.
    public var speed: Double?
    /// Milliseconds since the Unix epoch at which the fix was taken.
    public var timestamp: Int64
    /// Where the device points, degrees clockwise from magnetic north in 0..<360, from the compass the service
    /// reads (iio-sensor-proxy's, with `[compass] enable=true`, for exact clients); unlike ``course``, which is
    /// where it moves. Nil without a compass.
    public var magneticHeading: Double?
    /// ``magneticHeading`` turned to true north by the World Magnetic Model's declination at the fix's place and
    /// date, degrees clockwise in 0..<360. Nil without a compass, and also without the model's file, outside its
    /// dates, and near the magnetic poles, where a compass cannot point.
    public var trueHeading: Double?
    /// Heading uncertainty, degrees at 95% confidence: the sensor reports none, so the service gives a fixed
    /// figure (15°, 30° in the magnetic model's caution zone near the poles); nil when unknown.
    public var headingAccuracy: Double?

    /// The provider that produced it ("gpsd", "nmea", "static", "replay", "wifi", "ip"), when the service says.
    public var provider: String?
    /// True when the fix was played back or injected rather than measured.
    public var isSimulated: Bool
    /// True for a last-known location that may be old.
    public var isStale: Bool
    /// The kind of satellite fix (`io.github.whereabouts1.Location.FixType`): "none", "2d", "3d", "dgps",
    /// "rtk-float" or "rtk-fixed"; nil from a plain GeoClue.
    public var fixType: String?
    /// The receiver's horizontal dilution of precision (`HDOP`); nil when unknown, or below exact level.
    public var hdop: Double?
    /// The receiver's vertical dilution of precision (`VDOP`); nil when unknown, or below exact level.
    public var vdop: Double?
    /// The receiver's position dilution of precision (`PDOP`); nil when unknown, or below exact level.
    public var pdop: Double?

    public init(
        latitude: Double, longitude: Double, altitude: Double? = nil, horizontalAccuracy: Double,
        verticalAccuracy: Double? = nil, course: Double? = nil, speed: Double? = nil, timestamp: Int64,
        magneticHeading: Double? = nil, trueHeading: Double? = nil, headingAccuracy: Double? = nil,
        provider: String? = nil, isSimulated: Bool = false, isStale: Bool = false, fixType: String? = nil,
        hdop: Double? = nil, vdop: Double? = nil, pdop: Double? = nil
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
        self.course = course
        self.speed = speed
        self.timestamp = timestamp
        self.magneticHeading = magneticHeading
        self.trueHeading = trueHeading
        self.headingAccuracy = headingAccuracy
        self.provider = provider
        self.isSimulated = isSimulated
        self.isStale = isStale
        self.fixType = fixType
        self.hdop = hdop
        self.vdop = vdop
        self.pdop = pdop
    }

    /// The seed format's keys; the extra fields are left out of the JSON.
    enum CodingKeys: String, CodingKey {
        case latitude, longitude, altitude, horizontalAccuracy, verticalAccuracy, course, speed, timestamp
        case magneticHeading, trueHeading, headingAccuracy
    }

    public init(from decoder: any Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        latitude = try values.decode(Double.self, forKey: .latitude)
        longitude = try values.decode(Double.self, forKey: .longitude)
        altitude = try values.decodeIfPresent(Double.self, forKey: .altitude)
        horizontalAccuracy = try values.decode(Double.self, forKey: .horizontalAccuracy)
        verticalAccuracy = try values.decodeIfPresent(Double.self, forKey: .verticalAccuracy)
        course = try values.decodeIfPresent(Double.self, forKey: .course)
        speed = try values.decodeIfPresent(Double.self, forKey: .speed)
        timestamp = try values.decode(Int64.self, forKey: .timestamp)
        magneticHeading = try values.decodeIfPresent(Double.self, forKey: .magneticHeading)
        trueHeading = try values.decodeIfPresent(Double.self, forKey: .trueHeading)
        headingAccuracy = try values.decodeIfPresent(Double.self, forKey: .headingAccuracy)
        provider = nil
        isSimulated = false
        isStale = false
    }

    /// Encodes every seed key, unknown values as `null`.
    public func encode(to encoder: any Encoder) throws {
        var values = encoder.container(keyedBy: CodingKeys.self)
        try values.encode(latitude, forKey: .latitude)
        try values.encode(longitude, forKey: .longitude)
        try values.encode(altitude, forKey: .altitude)
        try values.encode(horizontalAccuracy, forKey: .horizontalAccuracy)
        try values.encode(verticalAccuracy, forKey: .verticalAccuracy)
        try values.encode(course, forKey: .course)
        try values.encode(speed, forKey: .speed)
        try values.encode(timestamp, forKey: .timestamp)
        try values.encode(magneticHeading, forKey: .magneticHeading)
        try values.encode(trueHeading, forKey: .trueHeading)
        try values.encode(headingAccuracy, forKey: .headingAccuracy)
    }
}
