/// Positions known for sets of access points: the service's answers, and places learnt from satellite fixes.
///
/// Access points rarely move, so an answer for a set of them stays good for weeks, and a machine that returns to
/// a place it has been need not ask anyone. Each entry holds the access points of one scan (addresses and
/// signals, strongest first, no network names), a position with its accuracy, its ``Origin`` and when it was
/// stored.
///
/// **Lookup.** A scan hits an entry when their ``ScanSimilarity`` (anchors at ``anchorSignal`` dBm or
/// stronger, at least ``minimumAnchors`` per scan) is at least ``hitSimilarity`` **and** they share at least
/// ``hitSharedMinimum`` access points — the same two-network minimum a query has, so one shared access point
/// (a neighbour's, heard from two places) never decides. Of the entries hit, the most similar wins, then the
/// more accurate, then the newer. A learnt place is reported with an accuracy of at least
/// ``learnedAccuracyFloor``: the fix was precise, but the scan only says the machine is within Wi-Fi range of
/// where the fix was taken.
///
/// **Storing.** ``store(latitude:longitude:accuracy:for:now:)`` keeps a service answer, replacing an earlier
/// answer for nearly the same access points; ``learn(latitude:longitude:accuracy:scan:now:)`` keeps a place
/// measured by a satellite fix, refreshing the learnt place it is already known as.
///
/// **Age.** An entry older than its origin's maximum age is neither returned nor kept: ``networkMaximumAge``
/// (30 days) for answers, since the service's view of an access point can change as others submit,
/// ``learnedMaximumAge`` (90 days) for places learnt on this machine, which were measured here. An entry stored
/// more than ``futureTolerance`` after now (the wall clock was set back) is dropped too.
///
/// **Size.** At most ``capacity`` entries; storing one more drops the least recently used (stored, refreshed or
/// returned by a lookup).
///
/// **Persistence.** ``serialized()`` and ``parse(_:now:capacity:)`` (in `PositionCacheFormat.swift`).
public struct PositionCache: Sendable {
    /// Where an entry's position came from.
    public enum Origin: String, Sendable, Equatable, CaseIterable {
        /// An answer from the positioning service.
        case network
        /// A satellite fix better than ``PositionCache/learnAccuracyBelow`` taken with the scan.
        case learned
    }

    /// One remembered place.
    public struct Entry: Sendable, Equatable {
        /// The scan's access points, strongest first, each address once; at least two.
        public var accessPoints: [AccessPointSighting]
        /// Degrees north, WGS84.
        public var latitude: Double
        /// Degrees east, WGS84.
        public var longitude: Double
        /// The service's accuracy, or the fix's, in metres at 95% confidence (not raised to the learnt floor).
        public var accuracy: Double
        /// Where the position came from.
        public var origin: Origin
        /// When the entry was stored or last refreshed.
        public var stored: WallTime

        /// Makes an entry.
        public init(
            accessPoints: [AccessPointSighting], latitude: Double, longitude: Double, accuracy: Double,
            origin: Origin, stored: WallTime
        ) {
            self.accessPoints = accessPoints
            self.latitude = latitude
            self.longitude = longitude
            self.accuracy = accuracy
            self.origin = origin
            self.stored = stored
        }
    }

    /// The entries kept by default.
    public static let defaultCapacity = 2000
    /// How long a service answer is used.
    public static let networkMaximumAge: Duration = .seconds(30 * 86_400)
    /// How long a learnt place is used.
    public static let learnedMaximumAge: Duration = .seconds(90 * 86_400)
    /// How far in the future an entry's time may lie before it is taken for the mark of a wrong clock.
    public static let futureTolerance: Duration = .seconds(86_400)
    /// Fixes must be more accurate than this, in metres, to be learnt.
    public static let learnAccuracyBelow = 50.0
    /// The least accuracy reported for a learnt place, in metres: about the range of Wi-Fi.
    public static let learnedAccuracyFloor = 100.0
    /// The least similarity that is a hit.
    public static let hitSimilarity = 0.5
    /// The least similarity at which a new service answer replaces an earlier one instead of adding an entry.
    public static let replaceSimilarity = 0.75
    /// The fewest shared access points that make a hit.
    public static let hitSharedMinimum = 2
    /// Access points heard this strongly (dBm) anchor a scan for the cache.
    public static let anchorSignal = -85
    /// A scan with fewer anchors than this is anchored by its strongest access points.
    public static let minimumAnchors = 3
    /// The most access points an entry keeps, the strongest.
    public static let maximumAccessPointsPerEntry = 32
    /// The largest accuracy stored, in metres.
    public static let maximumAccuracy = IchnaeaOutcome.maximumAccuracy

    /// The most entries kept.
    public let capacity: Int

    /// An entry with what lookups need worked out once, and when it was last used.
    private struct Slot: Sendable {
        var entry: Entry
        var profile: ScanProfile
        var lastUse: UInt64
    }

    /// The entries by a number given when they are added.
    private var slots: [UInt64: Slot] = [:]
    /// For each address, the entries that hold it: the only entries a scan can hit.
    private var holders: [BSSID: Set<UInt64>] = [:]
    private var nextNumber: UInt64 = 0
    private var uses: UInt64 = 0

    /// An empty cache of at most `capacity` entries (a negative capacity counts as 0: nothing is kept).
    public init(capacity: Int = PositionCache.defaultCapacity) {
        self.capacity = max(0, capacity)
    }

    /// The entries, least recently used first.
    public var entries: [Entry] { slots.values.sorted { $0.lastUse < $1.lastUse }.map(\.entry) }

    /// How many entries there are.
    public var count: Int { slots.count }

    /// The number of entries of `origin`.
    public func count(of origin: Origin) -> Int { slots.values.count { $0.entry.origin == origin } }

    /// The position remembered for `usable` (``AccessPointSelection/usable(_:)`` of a scan) at `now`, or nil.
    /// A hit counts as a use of its entry.
    public mutating func lookup(_ usable: [AccessPoint], now: WallTime) -> CachedPosition? {
        let query = PositionCache.profile(usable.map(\.sighting))
        var best: (number: UInt64, position: CachedPosition)?
        for (number, comparison) in hits(for: query) {
            guard let slot = slots[number], !PositionCache.isExpired(slot.entry, now: now) else { continue }
            let candidate = CachedPosition(slot.entry, similarity: comparison.similarity)
            if let current = best?.position, !candidate.isBetterHit(than: current) { continue }
            best = (number, candidate)
        }
        guard let best else { return nil }
        touch(best.number)
        return best.position
    }

    /// Remembers the service's answer for `usable` at `now`; false (and nothing stored) when the position is not
    /// valid or `usable` has fewer than two access points with valid signals.
    ///
    /// The answer replaces the most similar earlier answer whose access points are at least
    /// ``replaceSimilarity`` like `usable`'s (the service's newer view of the same place) rather than adding to
    /// it; a merely neighbouring place (a hit below that) keeps its own entry.
    @discardableResult
    public mutating func store(
        latitude: Double, longitude: Double, accuracy: Double, for usable: [AccessPoint], now: WallTime
    ) -> Bool {
        guard PositionCache.isValidPosition(latitude, longitude), accuracy.isFinite, accuracy > 0,
            accuracy <= PositionCache.maximumAccuracy
        else { return false }
        return remember(
            latitude: latitude, longitude: longitude, accuracy: accuracy, origin: .network, scan: usable, now: now)
    }

    /// Learns the place of `scan` (usable access points) from a satellite fix taken with it at `now`; false (and
    /// nothing learnt) unless the fix is valid and more accurate than ``learnAccuracyBelow``, and the scan has at
    /// least two access points with valid signals.
    ///
    /// A learnt place that `scan` hits and whose position is within both radii of the fix (the same place) is
    /// refreshed rather than added to: its access points become the scan's, its time `now`, and its position
    /// the more accurate of the two. A fix outside those radii is a new place, even where the access points
    /// are alike (walking down a street, each few metres is learnt as its own place; the most similar one is
    /// found later). So a machine that stays put with a satellite receiver keeps one entry for where it is.
    @discardableResult
    public mutating func learn(
        latitude: Double, longitude: Double, accuracy: Double, scan: [AccessPoint], now: WallTime
    ) -> Bool {
        guard PositionCache.isValidPosition(latitude, longitude), accuracy.isFinite, accuracy >= 0,
            accuracy < PositionCache.learnAccuracyBelow
        else { return false }
        return remember(
            latitude: latitude, longitude: longitude, accuracy: accuracy, origin: .learned, scan: scan, now: now)
    }

    /// Forgets the entries that `usable` hits and that place it at `latitude`, `longitude`: an answer the fusion
    /// rule found contradicted by a better-placed source (``SourceAgreement``). True when one went.
    @discardableResult
    public mutating func forget(_ usable: [AccessPoint], latitude: Double, longitude: Double) -> Bool {
        let placing = hits(for: PositionCache.profile(usable.map(\.sighting))).map(\.number).filter {
            slots[$0]?.entry.latitude == latitude && slots[$0]?.entry.longitude == longitude
        }
        for number in placing { remove(number) }
        return !placing.isEmpty
    }

    /// Drops the entries that are past their age at `now`.
    public mutating func prune(now: WallTime) {
        for (number, slot) in slots where PositionCache.isExpired(slot.entry, now: now) { remove(number) }
    }

    /// Adds `entry` as the most recently used, unless it is expired at `now`; drops the least recently used one
    /// when full. Used by the parser, which has validated `entry`.
    mutating func append(_ entry: Entry, now: WallTime) {
        guard !PositionCache.isExpired(entry, now: now) else { return }
        insert(entry)
    }

    // MARK: - Rules

    private mutating func remember(
        latitude: Double, longitude: Double, accuracy: Double, origin: Origin, scan: [AccessPoint], now: WallTime
    ) -> Bool {
        let sightings = PositionCache.normalised(scan.map(\.sighting))
        guard sightings.count >= AccessPointSelection.minimumForQuery, capacity > 0 else { return false }
        prune(now: now)
        var entry = Entry(
            accessPoints: sightings, latitude: latitude, longitude: longitude, accuracy: accuracy, origin: origin,
            stored: now)
        let replaced = hits(for: PositionCache.profile(sightings))
            .filter { hit in
                guard let old = slots[hit.number]?.entry, old.origin == origin else { return false }
                switch origin {
                case .network:
                    return hit.comparison.similarity >= PositionCache.replaceSimilarity
                case .learned:
                    return greatCircleDistance(old.latitude, old.longitude, latitude, longitude)
                        <= old.accuracy + accuracy
                }
            }
            .max { $0.comparison.similarity < $1.comparison.similarity }
        if let replaced, let old = slots[replaced.number]?.entry {
            if origin == .learned, old.accuracy < accuracy {
                entry.latitude = old.latitude
                entry.longitude = old.longitude
                entry.accuracy = old.accuracy
            }
            remove(replaced.number)
        }
        insert(entry)
        return true
    }

    /// The entries that `profile` hits, in the order they were added, with how similar each is.
    private func hits(for profile: ScanProfile) -> [(number: UInt64, comparison: ScanSimilarity)] {
        var sharedAddresses: [UInt64: Int] = [:]
        for bssid in profile.present {
            for number in holders[bssid] ?? [] { sharedAddresses[number, default: 0] += 1 }
        }
        return sharedAddresses.filter { $0.value >= PositionCache.hitSharedMinimum }.keys.sorted()
            .compactMap { number in
                guard let slot = slots[number] else { return nil }
                let comparison = profile.similarity(to: slot.profile)
                guard comparison.similarity >= PositionCache.hitSimilarity,
                    comparison.shared >= PositionCache.hitSharedMinimum
                else { return nil }
                return (number, comparison)
            }
    }

    private mutating func insert(_ entry: Entry) {
        guard capacity > 0 else { return }
        while slots.count >= capacity, let oldest = slots.min(by: { $0.value.lastUse < $1.value.lastUse }) {
            remove(oldest.key)
        }
        nextNumber += 1
        uses += 1
        slots[nextNumber] = Slot(entry: entry, profile: PositionCache.profile(entry.accessPoints), lastUse: uses)
        for sighting in entry.accessPoints { holders[sighting.bssid, default: []].insert(nextNumber) }
    }

    private mutating func remove(_ number: UInt64) {
        guard let slot = slots.removeValue(forKey: number) else { return }
        for sighting in slot.entry.accessPoints {
            holders[sighting.bssid]?.remove(number)
            if holders[sighting.bssid]?.isEmpty == true { holders[sighting.bssid] = nil }
        }
    }

    private mutating func touch(_ number: UInt64) {
        uses += 1
        slots[number]?.lastUse = uses
    }

    static func isExpired(_ entry: Entry, now: WallTime) -> Bool {
        let age = now.since(entry.stored)
        let maximum = entry.origin == .network ? networkMaximumAge : learnedMaximumAge
        return age > maximum || age < .zero - futureTolerance
    }

    static func isValidPosition(_ latitude: Double, _ longitude: Double) -> Bool {
        latitude.isFinite && longitude.isFinite && (-90...90).contains(latitude) && (-180...180).contains(longitude)
    }

    /// Each address once at its strongest, valid signals only, strongest first, at most
    /// ``maximumAccessPointsPerEntry``.
    static func normalised(_ sightings: [AccessPointSighting]) -> [AccessPointSighting] {
        let valid = AccessPointSelection.weakestSignal...AccessPointSelection.strongestSignal
        var strongest: [BSSID: Int] = [:]
        for sighting in sightings where valid.contains(sighting.signal) {
            strongest[sighting.bssid] = max(strongest[sighting.bssid] ?? .min, sighting.signal)
        }
        return strongest.map { AccessPointSighting(bssid: $0.key, signal: $0.value) }
            .sorted { $0.signal != $1.signal ? $0.signal > $1.signal : $0.bssid < $1.bssid }
            .prefix(maximumAccessPointsPerEntry).map { $0 }
    }

    private static func profile(_ sightings: [AccessPointSighting]) -> ScanProfile {
        ScanProfile(sightings, anchorSignal: anchorSignal, minimumAnchors: minimumAnchors)
    }
}

/// A position the cache returned.
public struct CachedPosition: Sendable, Equatable {
    /// Degrees north, WGS84.
    public var latitude: Double
    /// Degrees east, WGS84.
    public var longitude: Double
    /// The radius to report, in metres at 95% confidence: the service's, or for a learnt place the fix's
    /// raised to ``PositionCache/learnedAccuracyFloor``.
    public var accuracy: Double
    /// Where the position came from.
    public var origin: PositionCache.Origin
    /// When the entry was stored.
    public var stored: WallTime
    /// How similar the scan was to the entry's, in ``PositionCache/hitSimilarity``...1.
    public var similarity: Double

    /// Makes a result.
    public init(
        latitude: Double, longitude: Double, accuracy: Double, origin: PositionCache.Origin, stored: WallTime,
        similarity: Double
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        self.origin = origin
        self.stored = stored
        self.similarity = similarity
    }

    init(_ entry: PositionCache.Entry, similarity: Double) {
        self.init(
            latitude: entry.latitude, longitude: entry.longitude,
            accuracy: entry.origin == .learned
                ? max(entry.accuracy, PositionCache.learnedAccuracyFloor) : entry.accuracy,
            origin: entry.origin, stored: entry.stored, similarity: similarity)
    }

    /// More similar, then more accurate, then newer.
    func isBetterHit(than other: CachedPosition) -> Bool {
        if similarity != other.similarity { return similarity > other.similarity }
        if accuracy != other.accuracy { return accuracy < other.accuracy }
        return stored > other.stored
    }
}
