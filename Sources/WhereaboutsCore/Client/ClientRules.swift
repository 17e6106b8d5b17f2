/// What a client does with a new fix, by GeoClue's threshold rule.
public enum ThresholdDecision: Sendable, Equatable {
    /// Publish it as a new Location object and signal `LocationUpdated`.
    case signal
    /// Below a threshold: refresh the current Location object in place, without `LocationUpdated`.
    case updateInPlace
}

/// GeoClue's per-client thresholds (`org.freedesktop.GeoClue2.Client.DistanceThreshold` and `TimeThreshold`).
///
/// As in GeoClue 2.6, the thresholds *suppress* with OR: a fix is held back when it is closer than
/// `distance` metres **or** less than `time` seconds from the last *signalled* fix, so a signal needs both
/// enough distance and enough time. Zero disables a threshold. The first fix is always signalled.
public struct Thresholds: Sendable, Equatable {
    /// Metres; 0 = no distance filtering.
    public var distance: UInt32
    /// Seconds; 0 = no time filtering.
    public var time: UInt32

    public init(distance: UInt32 = 0, time: UInt32 = 0) {
        self.distance = distance
        self.time = time
    }

    /// Decides between a new signal and an in-place update for `fix`, given the last signalled fix.
    public func decide(_ fix: Fix, lastSignalled: Fix?) -> ThresholdDecision {
        guard let last = lastSignalled else { return .signal }
        if distance > 0 && fix.distance(to: last) < Double(distance) { return .updateInPlace }
        if time > 0 {
            let (difference, overflow) = fix.timestamp.microseconds.subtractingReportingOverflow(
                last.timestamp.microseconds)
            if !overflow && difference.magnitude < UInt64(time) * 1_000_000 { return .updateInPlace }
        }
        return .signal
    }
}

/// The bounded set of Location objects one client keeps, and when each goes.
///
/// GeoClue keeps the current and previous Location objects and releases older ones 5 seconds after they stop
/// being the previous one, so the `old` path of a `LocationUpdated` stays readable. GeoClue 2.6 in practice never
/// releases them (memory grows about 1 KiB per update). Here the current and previous objects always stay, an
/// older one stays for ``grace`` and at most ``maximumRetiring`` older ones are kept, so a client costs constant
/// memory however long it runs.
public struct LocationLedger: Sendable {
    /// How long an object stays readable after it stopped being the previous one.
    public static let grace: Duration = .seconds(5)
    /// The most objects kept in their grace period at once; beyond it the oldest goes early.
    public static let maximumRetiring = 2

    /// The index the next Location object gets (GeoClue's per-client counter, from 0).
    public private(set) var nextIndex: UInt32 = 0
    /// The current object's index, once a fix has been signalled.
    public private(set) var current: UInt32?
    /// The previous object's index.
    public private(set) var previous: UInt32?
    /// Older objects and when each is released.
    public private(set) var retiring: [(index: UInt32, expiry: MonotonicTime)] = []

    public init() {}

    /// Every index alive now.
    public var live: [UInt32] { retiring.map(\.index) + [previous, current].compactMap { $0 } }

    /// Makes a new current object at `now`; returns its index, the index it replaces, and the indices that must
    /// be released at once to stay within bounds.
    public mutating func advance(now: MonotonicTime) -> (new: UInt32, old: UInt32?, released: [UInt32]) {
        let index = nextIndex
        nextIndex &+= 1
        if let previous { retiring.append((previous, now + LocationLedger.grace)) }
        let old = current
        previous = current
        current = index
        var released: [UInt32] = []
        while retiring.count > LocationLedger.maximumRetiring { released.append(retiring.removeFirst().index) }
        return (index, old, released)
    }

    /// Releases the objects whose grace ended by `now`, returning their indices.
    public mutating func expire(now: MonotonicTime) -> [UInt32] {
        let expired = retiring.filter { $0.expiry <= now }.map(\.index)
        retiring.removeAll { $0.expiry <= now }
        return expired
    }

    /// The earliest pending expiry.
    public var nextExpiry: MonotonicTime? { retiring.map(\.expiry).min() }
}

/// What a client served at `level` and shown at `shown` sees of `fix`: the fix ``coarsen(_:to:)`` makes for `shown`,
/// and, served below exact, without its fix type and DOPs (`io.github.whereabouts1.Location.FixType`, `HDOP`,
/// `VDOP`, `PDOP`): what the receiver tells of its satellites goes to exact clients only.
public func present(_ fix: Fix, servedAt level: AccuracyLevel, shownAt shown: AccuracyLevel) -> Fix {
    var seen = coarsen(fix, to: shown)
    guard level < .exact else { return seen }
    seen.fixType = .none
    (seen.hdop, seen.vdop, seen.pdop) = (nil, nil, nil)
    return seen
}

/// Reduces a fix to what a client limited to a coarse accuracy level may see (an approximate grant, or an agent's
/// allowance below what the app requested, or a cap below exact:
/// ``AuthorisationRule/shownLevel(requested:approximate:agentAllowance:cap:)``).
///
/// Below `exact`, the position is snapped to the centre of a cell of a fixed grid whose size is the level's
/// nominal radius, so repeated fixes from one place always give the same answer and cannot be averaged back to
/// the true position; `horizontalAccuracy` grows by the distance from the cell's centre to its farthest corner
/// (measured on the edge nearer the equator, where a cell is widest), so the reported circle always holds the
/// input's own circle; the values that would reveal more (altitude, speed, course) are dropped.
public func coarsen(_ fix: Fix, to level: AccuracyLevel) -> Fix {
    guard level < .exact else { return fix }
    let cell = level.nominalRadius
    let metresPerDegree = 111_320.0
    let latitudeStep = cell / metresPerDegree
    let latitude = min(90, max(-90, (floorOf(fix.latitude / latitudeStep) + 0.5) * latitudeStep))
    let longitudeStep = min(360, cell / (metresPerDegree * max(0.01, cosine(latitude * Double.pi / 180))))
    var longitude = (floorOf((fix.longitude + 180) / longitudeStep) + 0.5) * longitudeStep - 180
    if longitude > 180 { longitude -= 360 }
    let equatorSideLatitude = max(0, abs(latitude) - latitudeStep / 2)
    let halfWidth = longitudeStep / 2 * metresPerDegree * cosine(equatorSideLatitude * Double.pi / 180)
    let halfDiagonal = (halfWidth * halfWidth + cell * cell / 4).squareRoot()
    var coarse = Fix(
        latitude: latitude, longitude: longitude,
        horizontalAccuracy: fix.horizontalAccuracy + halfDiagonal,
        timestamp: fix.timestamp, provider: fix.provider, description: fix.description,
        isSimulated: fix.isSimulated)
    coarse.horizontalAccuracy = max(coarse.horizontalAccuracy, cell)
    return coarse
}
