/// What one client adds to the service's activity while it needs fixes (started, or waiting for a single one).
public struct ActivityContribution: Hashable, Sendable {
    /// The level the providers must serve it at.
    public var level: AccuracyLevel
    /// The owner's Unix user, when known.
    public var user: UInt32?
    /// Its app's desktop id, or nil for an app marked `system=true`, which `InUse` and `ActiveApps` leave out.
    public var app: String?
    /// Started (not only waiting for a single fix): such a client of a non-system app makes `InUse` true.
    public var started: Bool
    /// Its `TimeThreshold`, seconds (0: none).
    public var timeThreshold: UInt32

    public init(level: AccuracyLevel, user: UInt32?, app: String?, started: Bool, timeThreshold: UInt32 = 0) {
        self.level = level
        self.user = user
        self.app = app
        self.started = started
        self.timeThreshold = timeThreshold
    }
}

/// The service's activity kept up to date client by client: the level the providers must serve (the highest any
/// client needs), `InUse` and the apps receiving location, in all and per user.
///
/// Each change costs a few dictionary updates whatever the number of clients, so dropping a connection's clients
/// costs what that connection owned.
public struct ActivityTally: Sendable {
    private var levels: [AccuracyLevel: Int] = [:]
    private var exactTimeThresholds: [UInt32: Int] = [:]
    private var startedApps = 0
    private var apps: [String: Int] = [:]
    private var appsByUser: [UInt32?: [String: Int]] = [:]

    public init() {}

    /// Replaces what one client contributed (nil: nothing, it needs no fixes) with `new`.
    public mutating func replace(_ old: ActivityContribution?, with new: ActivityContribution?) {
        guard old != new else { return }
        if let old { apply(old, by: -1) }
        if let new { apply(new, by: 1) }
    }

    private mutating func apply(_ contribution: ActivityContribution, by delta: Int) {
        Self.add(delta, to: &levels, contribution.level)
        if contribution.level == .exact { Self.add(delta, to: &exactTimeThresholds, contribution.timeThreshold) }
        guard let app = contribution.app else { return }
        if contribution.started { startedApps += delta }
        Self.add(delta, to: &apps, app)
        Self.add(delta, to: &appsByUser[contribution.user, default: [:]], app)
        if appsByUser[contribution.user]?.isEmpty == true { appsByUser[contribution.user] = nil }
    }

    private static func add<Key: Hashable>(_ delta: Int, to counts: inout [Key: Int], _ key: Key) {
        let count = (counts[key] ?? 0) + delta
        counts[key] = count > 0 ? count : nil
    }

    /// The highest level any client needs, or nil when none needs fixes.
    public var demand: AccuracyLevel? { levels.keys.max() }

    /// The smallest `TimeThreshold` of the clients served at exact level, or nil when none is: what a satellite
    /// receiver that can be paced (a modem's) is paced by, as GeoClue paces it.
    public var smallestExactTimeThreshold: UInt32? { exactTimeThresholds.keys.min() }

    /// True while a started client of a non-system app is counted.
    public var inUse: Bool { startedApps > 0 }

    /// The apps (not `system=true`) receiving location, sorted.
    public var allApps: [String] { apps.keys.sorted() }

    /// The apps (not `system=true`) receiving location for clients of `user`, sorted.
    public func apps(of user: UInt32) -> [String] { (appsByUser[user] ?? [:]).keys.sorted() }
}
