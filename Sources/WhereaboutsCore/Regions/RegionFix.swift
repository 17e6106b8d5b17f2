/// A fix as regions see it: a position, its accuracy and when it was measured.
public struct RegionFix: Sendable, Equatable {
    /// Degrees north, WGS84.
    public var latitude: Double
    /// Degrees east, WGS84.
    public var longitude: Double
    /// The radius at 95% confidence, in metres.
    public var accuracy: Double
    /// When the position was measured.
    public var timestamp: WallTime

    /// Makes a fix.
    public init(latitude: Double, longitude: Double, accuracy: Double, timestamp: WallTime) {
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        self.timestamp = timestamp
    }

    /// True when the fix can decide anything: latitude and longitude finite and in range, the accuracy finite and
    /// not negative. The monitor ignores any other fix.
    public var isValid: Bool {
        latitude.isFinite && longitude.isFinite && (-90...90).contains(latitude) && (-180...180).contains(longitude)
            && accuracy.isFinite && accuracy >= 0
    }
}
