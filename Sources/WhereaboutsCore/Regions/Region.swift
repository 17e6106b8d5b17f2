/// A circle watched for an owner: AddRegion's arguments, checked.
///
/// A region is valid by construction: ``validated(id:latitude:longitude:radius:options:now:)`` makes them, and
/// its properties can only be read.
public struct Region: Sendable, Equatable {
    /// The smallest radius watched, in metres: no provider but a satellite receiver can decide a smaller circle,
    /// so a smaller one is raised to this.
    public static let minimumRadius = 100.0
    /// The largest radius accepted, in metres.
    public static let maximumRadius = 100_000.0
    /// The longest id, in bytes of UTF-8.
    public static let maximumIDBytes = 255
    /// The most regions one owner (an app of a user) may have.
    public static let limitPerOwner = 1000
    /// The most regions one user may have, all its apps together: whatever ids it claims, a user cannot make the
    /// service keep more.
    public static let limitPerUser = 2000
    /// The most regions the service keeps, all users together: at the longest ids, about 5 KiB of memory each
    /// (the unit's `MemoryMax` counts them).
    public static let limitInAll = 10_000

    /// The owner's name for the region: 1 to ``maximumIDBytes`` bytes of UTF-8 without NUL.
    public private(set) var id: String
    /// The centre's degrees north, WGS84, in −90…90.
    public private(set) var latitude: Double
    /// The centre's degrees east, WGS84, in −180…180.
    public private(set) var longitude: Double
    /// The radius watched, in metres: in ``minimumRadius``…``maximumRadius``.
    public private(set) var radius: Double
    /// What to report and for how long to watch.
    public private(set) var options: RegionOptions
}

/// What a region reports and until when it is watched (AddRegion's options).
public struct RegionOptions: Sendable, Equatable {
    /// Report entering ("notify-entry").
    public var notifyEntry = true
    /// Report leaving ("notify-exit").
    public var notifyExit = true
    /// Report dwelling after staying inside this long since the entry ("dwell"); nil: never.
    public var dwell: Duration?
    /// When the region is removed ("expires"); nil: never.
    public var expires: WallTime?

    /// The defaults: entries and exits reported, no dwell, no expiry.
    public init() {}
}
