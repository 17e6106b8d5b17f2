/// The positioning service's answers for sets of serving cells, kept so that a machine back on cells it has been
/// on need not ask again.
///
/// Each entry holds the cells of one query (each once, in ``key(_:)`` order), the position the service answered
/// with its accuracy, and when it was stored.
///
/// **Lookup.** Only the same set of cells hits: cells are not places the way access points are, and a neighbouring
/// cell's answer is another place, often kilometres away. The order the cells come in does not matter.
///
/// **Storing.** ``store(latitude:longitude:accuracy:for:now:)`` keeps an answer, replacing an earlier one for the
/// same cells: the service's newer view of them.
///
/// **Age.** An entry older than ``maximumAge`` (30 days, as an answer for access points: the service's view of a
/// cell changes as others submit) is neither returned nor kept, nor is one stored more than
/// ``PositionCache/futureTolerance`` after now (the wall clock was set back).
///
/// **Size.** At most ``capacity`` entries; storing one more drops the least recently used (stored or returned by a
/// lookup).
///
/// **Persistence.** ``serialized()`` and ``parse(_:now:capacity:)`` (in `CellAnswerCacheFormat.swift`).
public struct CellAnswerCache: Sendable {
    /// One remembered answer.
    public struct Entry: Sendable, Equatable {
        /// The cells asked about, each once, in ``CellAnswerCache/key(_:)`` order; 1 to
        /// ``CellAnswerCache/maximumCellsPerEntry``.
        public var cells: [ServingCell]
        /// Degrees north, WGS84.
        public var latitude: Double
        /// Degrees east, WGS84.
        public var longitude: Double
        /// The service's accuracy, in metres at 95% confidence.
        public var accuracy: Double
        /// When the entry was stored.
        public var stored: WallTime

        /// Makes an entry.
        public init(cells: [ServingCell], latitude: Double, longitude: Double, accuracy: Double, stored: WallTime) {
            self.cells = cells
            self.latitude = latitude
            self.longitude = longitude
            self.accuracy = accuracy
            self.stored = stored
        }
    }

    /// The entries kept by default.
    public static let defaultCapacity = 512
    /// How long an answer is used: as long as an answer for access points.
    public static let maximumAge: Duration = PositionCache.networkMaximumAge
    /// The most cells an entry holds: a query names one serving cell per modem.
    public static let maximumCellsPerEntry = 8

    /// The most entries kept.
    public let capacity: Int

    /// An entry and when it was last used.
    private struct Slot: Sendable {
        var entry: Entry
        var lastUse: UInt64
    }

    /// The entries by their cells, in ``key(_:)`` order.
    private var slots: [[ServingCell]: Slot] = [:]
    private var uses: UInt64 = 0

    /// An empty cache of at most `capacity` entries (a negative capacity counts as 0: nothing is kept).
    public init(capacity: Int = CellAnswerCache.defaultCapacity) {
        self.capacity = max(0, capacity)
    }

    /// The cells in the order entries keep them (radio, MCC, MNC, area, cell id), each once.
    public static func key(_ cells: [ServingCell]) -> [ServingCell] {
        Set(cells).sorted(by: isOrderedBefore)
    }

    /// The entries, least recently used first.
    public var entries: [Entry] { slots.values.sorted { $0.lastUse < $1.lastUse }.map(\.entry) }

    /// How many entries there are.
    public var count: Int { slots.count }

    /// The answer stored for exactly this set of cells (any order), unexpired at `now`; a hit is a use (LRU).
    public mutating func lookup(_ cells: [ServingCell], now: WallTime) -> Entry? {
        let key = CellAnswerCache.key(cells)
        guard let slot = slots[key], !CellAnswerCache.isExpired(slot.entry, now: now) else { return nil }
        uses += 1
        slots[key]?.lastUse = uses
        return slot.entry
    }

    /// Remembers the service's answer for `cells` (any order, each counted once) at `now`; false, and nothing
    /// stored, when `cells` is empty or has more than ``maximumCellsPerEntry`` distinct cells, the position is not
    /// valid, or the accuracy is not finite, above 0 and at most ``IchnaeaOutcome/maximumCellAccuracy``.
    ///
    /// The answer replaces an earlier one for the same cells. Expired entries are pruned first; when the cache is
    /// still full, the least recently used entry makes room.
    @discardableResult
    public mutating func store(
        latitude: Double, longitude: Double, accuracy: Double, for cells: [ServingCell], now: WallTime
    ) -> Bool {
        let key = CellAnswerCache.key(cells)
        guard !key.isEmpty, key.count <= CellAnswerCache.maximumCellsPerEntry,
            PositionCache.isValidPosition(latitude, longitude), CellAnswerCache.isValidAccuracy(accuracy),
            capacity > 0
        else { return false }
        prune(now: now)
        slots[key] = nil
        insert(Entry(cells: key, latitude: latitude, longitude: longitude, accuracy: accuracy, stored: now))
        return true
    }

    /// Drops the entries that are past their age at `now`.
    public mutating func prune(now: WallTime) {
        for (key, slot) in slots where CellAnswerCache.isExpired(slot.entry, now: now) { slots[key] = nil }
    }

    /// Adds `entry` as the most recently used, unless it is expired at `now`, replacing an entry for the same cells;
    /// drops the least recently used one when full. Used by the parser, which has validated `entry`.
    mutating func append(_ entry: Entry, now: WallTime) {
        guard !CellAnswerCache.isExpired(entry, now: now) else { return }
        slots[entry.cells] = nil
        insert(entry)
    }

    // MARK: - Rules

    private mutating func insert(_ entry: Entry) {
        guard capacity > 0 else { return }
        while slots.count >= capacity, let oldest = slots.min(by: { $0.value.lastUse < $1.value.lastUse }) {
            slots[oldest.key] = nil
        }
        uses += 1
        slots[entry.cells] = Slot(entry: entry, lastUse: uses)
    }

    static func isExpired(_ entry: Entry, now: WallTime) -> Bool {
        let age = now.since(entry.stored)
        return age > maximumAge || age < .zero - PositionCache.futureTolerance
    }

    /// Finite, above 0 and at most ``IchnaeaOutcome/maximumCellAccuracy``.
    static func isValidAccuracy(_ accuracy: Double) -> Bool {
        accuracy.isFinite && accuracy > 0 && accuracy <= IchnaeaOutcome.maximumCellAccuracy
    }

    /// Radio (GSM, UMTS, LTE, NR), then country code, network code, area code and cell id.
    private static func isOrderedBefore(_ first: ServingCell, _ second: ServingCell) -> Bool {
        (rank(first.radio), first.mobileCountryCode, first.mobileNetworkCode, first.areaCode, first.cellID)
            < (rank(second.radio), second.mobileCountryCode, second.mobileNetworkCode, second.areaCode, second.cellID)
    }

    /// The radio's place in the order of keys: older radios first.
    private static func rank(_ radio: CellRadio) -> Int {
        switch radio {
        case .gsm: 0
        case .wcdma: 1
        case .lte: 2
        case .nr: 3
        }
    }
}
