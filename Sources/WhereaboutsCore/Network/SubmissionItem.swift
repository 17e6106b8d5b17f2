/// One report for Ichnaea's `/v2/geosubmit`: where a satellite fix put the machine, and the access points a scan
/// heard there.
///
/// Access point ages are relative to ``timestamp``, as Ichnaea reads them: an access point last heard 2 s before
/// the fix has age 2000 ms; one heard after it a negative age. ``SubmissionPacer`` makes items this way.
public struct SubmissionItem: Sendable, Equatable {
    /// When the position was measured.
    public var timestamp: WallTime
    /// Degrees north, WGS84.
    public var latitude: Double
    /// Degrees east, WGS84.
    public var longitude: Double
    /// Horizontal radius at 95% confidence, in metres.
    public var accuracy: Double
    /// Metres above mean sea level.
    public var altitude: Double?
    /// Ground speed in metres per second.
    public var speed: Double?
    /// Direction of travel, degrees clockwise from true north.
    public var heading: Double?
    /// The access points heard with the fix, already selected (``AccessPointSelection``).
    public var accessPoints: [AccessPoint]

    /// Makes an item.
    public init(
        timestamp: WallTime, latitude: Double, longitude: Double, accuracy: Double, altitude: Double? = nil,
        speed: Double? = nil, heading: Double? = nil, accessPoints: [AccessPoint]
    ) {
        self.timestamp = timestamp
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        self.altitude = altitude
        self.speed = speed
        self.heading = heading
        self.accessPoints = accessPoints
    }

    /// The access points that can be submitted: those whose SSID is valid UTF-8 (beaconDB ignores a Wi-Fi
    /// submission without an SSID, and a JSON string cannot carry other bytes).
    public var submittableAccessPoints: [AccessPoint] { accessPoints.filter { $0.ssidText != nil } }

    /// Ichnaea needs two Wi-Fi networks in a report; an item with fewer submittable ones is not sent.
    public static let minimumAccessPoints = 2
}
