/// One location fix as an app receives it.
///
/// Unknown values are `nil`; GeoClue's sentinels (`-DBL_MAX` altitude, `-1` speed and heading) never leak
/// through. Accuracies are radii at 95% confidence, in metres.
public struct Position: Sendable, Equatable, Codable {
    /// Degrees north (WGS84).
    public var latitude: Double
    /// Degrees east (WGS84).
    public var longitude: Double
    /// Horizontal accuracy in metres.
    public var accuracy: Double
    /// Metres above sea level.
    public var altitude: Double?
    /// Metres per second.
    public var speed: Double?
    /// Degrees clockwise from true north.
    public var heading: Double?
    /// Microseconds since the Unix epoch at which the fix was taken.
    public var timestampMicroseconds: Int64
    /// The source's own description, such as "Static location".
    public var description: String

    /// Reads a position from the properties of an `org.freedesktop.GeoClue2.Location` object (`GetAll`).
    public init?(geoClueProperties values: [String: DBusValueView]) {
        guard let latitude = values["Latitude"]?.double, let longitude = values["Longitude"]?.double,
            let accuracy = values["Accuracy"]?.double
        else { return nil }
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        altitude = values["Altitude"]?.double.flatMap { $0 <= -Double.greatestFiniteMagnitude ? nil : $0 }
        speed = values["Speed"]?.double.flatMap { $0 < 0 ? nil : $0 }
        heading = values["Heading"]?.double.flatMap { $0 < 0 ? nil : $0 }
        let stamp = values["Timestamp"]?.pair ?? (0, 0)
        timestampMicroseconds = Int64(clamping: stamp.0) &* 1_000_000 &+ Int64(clamping: stamp.1)
        description = values["Description"]?.string ?? ""
    }
}

/// A read-only view of a D-Bus property value, so that `Position` does not expose the binding's types.
public struct DBusValueView: Sendable {
    public var double: Double?
    public var string: String?
    public var pair: (UInt64, UInt64)?

    public init(double: Double? = nil, string: String? = nil, pair: (UInt64, UInt64)? = nil) {
        self.double = double
        self.string = string
        self.pair = pair
    }
}
