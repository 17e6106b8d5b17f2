/// GeoClue's accuracy levels, as apps ask for them.
public enum Accuracy: UInt32, Sendable, CaseIterable {
    case country = 1
    case city = 4
    case neighborhood = 5
    case street = 6
    case exact = 8
}

/// Options of a single location request (the seed API's request options, with W3C's maximum age).
public struct RequestOptions: Sendable {
    /// How long to wait for a fix (the seed API's default is 5 s).
    public var timeout: Duration
    /// A fix at most this old may be answered from the cache, without starting a provider.
    public var maximumAge: Duration?
    /// Whether satellite receivers may run (`enableHighAccuracy`).
    public var highAccuracy: Bool
    /// The accuracy level asked for.
    public var accuracy: Accuracy

    public init(
        timeout: Duration = .seconds(5), maximumAge: Duration? = nil, highAccuracy: Bool = true,
        accuracy: Accuracy = .exact
    ) {
        self.timeout = timeout
        self.maximumAge = maximumAge
        self.highAccuracy = highAccuracy
        self.accuracy = accuracy
    }
}

/// How a stream of locations is produced (the seed API's configuration).
public struct MonitoringConfiguration: Sendable {
    /// The accuracy level asked for.
    public var accuracy: Accuracy
    /// Whether satellite receivers may run.
    public var highAccuracy: Bool
    /// Metres the position must move before a new fix is delivered (`minimumUpdateDistanceInMeters`).
    public var minimumUpdateDistance: Double

    public init(accuracy: Accuracy = .exact, highAccuracy: Bool = true, minimumUpdateDistance: Double = 0) {
        self.accuracy = accuracy
        self.highAccuracy = highAccuracy
        self.minimumUpdateDistance = minimumUpdateDistance
    }
}
