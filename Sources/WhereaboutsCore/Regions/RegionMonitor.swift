/// All regions of all owners, where each stands, the spatial index and the owners' pending events.
///
/// Pure: no I/O and no clock of its own; times come in as arguments and fixes' timestamps. The service feeds it
/// every fix (``observe(_:coarsened:approximate:)``), calls ``timePassed(now:)`` at ``nextDeadline``, reports
/// the events it returns, and queues those of owners with no client (``queue(_:)``).
///
/// **Cost.** A fix looks only at the regions that can change by it: those not known to be outside (undecided,
/// unknown, inside or dwelling, kept as a set), which it may decide to be outside wherever they are, and those
/// whose circle may contain the fix's position (``RegionGrid``), the only outside regions it can enter (see
/// ``RegionRule``). Timed changes come from a heap of deadlines (``RegionDeadlines``). Only ``undecidable(now:)``
/// visits every region, as it changes every one.
///
/// **Limits.** ``Region/limitPerOwner``, ``Region/limitPerUser`` and ``Region/limitInAll`` regions;
/// ``pendingLimit`` events per owner and ``pendingLimitPerUser`` per user.
///
/// **Persistence.** ``RegionFile``, one user's at a time (``records(ofUser:)``): the monitor notes which users'
/// regions or pending events changed (``takeChangedUsers()``), so that a change costs a write of that user's
/// only.
public struct RegionMonitor: Sendable {
    /// The most pending events kept per owner; the oldest are dropped first.
    public static let pendingLimit = 100
    /// The most pending events kept per user, all its apps together; past it, an owner's oldest are dropped.
    public static let pendingLimitPerUser = 1000

    /// The regions by a number given when they are added.
    private(set) var watches: [UInt64: RegionWatch] = [:]
    /// Each owner's regions' numbers by id.
    private var numbers: [RegionOwner: [String: UInt64]] = [:]
    /// The regions that are not outside.
    private var notOutside: Set<UInt64> = []
    /// How many regions of each owner are smaller than the power rule's city level can decide.
    private var smallRegions: [RegionOwner: Int] = [:]
    private var grid = RegionGrid()
    private var deadlines = RegionDeadlines()
    private var lastNumber: UInt64 = 0
    /// Each owner's events not yet taken, oldest first.
    private(set) var pending: [RegionOwner: [RegionEvent]] = [:]
    /// What each user keeps.
    private var users: [UInt32: UserShare] = [:]
    /// The users whose regions or pending events changed (a region added, removed or changing its state, a pending
    /// event kept or taken) since ``takeChangedUsers()``, and only those: a fix that changes no state adds none, so
    /// the service writes nothing when nothing is new.
    public private(set) var changedUsers: Set<UInt32> = []

    /// One user's owners (those with regions or pending events) and how many regions and events they keep.
    private struct UserShare: Sendable {
        var owners: Set<RegionOwner> = []
        var regions = 0
        var events = 0
    }

    /// No regions.
    public init() {}

    /// The owners with at least one region, sorted.
    public var owners: [RegionOwner] { numbers.keys.sorted() }

    /// How many regions there are, of all owners.
    public var count: Int { watches.count }

    /// True when nothing is kept: no region and no pending event.
    public var isEmpty: Bool { users.isEmpty }

    /// The users who keep regions or pending events, sorted.
    public var keepingUsers: [UInt32] { users.keys.sorted() }

    /// The users whose regions or pending events changed since the last call; they are forgotten.
    public mutating func takeChangedUsers() -> Set<UInt32> {
        defer { changedUsers = [] }
        return changedUsers
    }

    /// Notes `users` as changed: what is kept on disk for them must be written again (it differs from what they
    /// keep, or writing it failed).
    public mutating func noteChanged(_ users: some Sequence<UInt32>) { changedUsers.formUnion(users) }

    /// Everything `user` keeps, by owner and id, for its own file.
    public func records(ofUser user: UInt32) -> RegionUserRecords {
        var kept: [RegionWatch] = []
        var events: [(owner: RegionOwner, events: [RegionEvent])] = []
        for owner in (users[user]?.owners ?? []).sorted() {
            for (_, number) in (numbers[owner] ?? [:]).sorted(by: { $0.key < $1.key }) {
                if let watch = watches[number] { kept.append(watch) }
            }
            if let owned = pending[owner] { events.append((owner, owned)) }
        }
        return RegionUserRecords(user: user, watches: kept, pending: events)
    }

    /// The regions of `owner` as ListRegions shows them, sorted by id.
    public func records(of owner: RegionOwner) -> [RegionRecord] {
        (numbers[owner] ?? [:]).sorted { $0.key < $1.key }.compactMap { watches[$0.value]?.record }
    }

    /// AddRegion: watches `region` for `owner` from `now`, replacing a region of the same id (which starts
    /// undecided again), and decides it at once by `fix` (the latest fix, as the owner may see it) when there is
    /// one: the work is this region's alone, whatever else is watched. Returns the event to report, if any.
    ///
    /// - Throws: ``RegionLimitReached``, before anything changes, when the id is new and the owner has
    ///   ``Region/limitPerOwner`` regions, its user ``Region/limitPerUser`` or the monitor ``Region/limitInAll``.
    @discardableResult
    public mutating func add(_ region: Region, for owner: RegionOwner, now: WallTime, decidedBy fix: RegionFix? = nil)
        throws(RegionLimitReached) -> RegionEvent?
    {
        let existing = numbers[owner]?[region.id]
        if existing == nil {
            if numbers[owner]?.count ?? 0 >= Region.limitPerOwner { throw RegionLimitReached(owner: owner) }
            if users[owner.user]?.regions ?? 0 >= Region.limitPerUser {
                throw RegionLimitReached(owner: owner, limit: .user)
            }
            if watches.count >= Region.limitInAll { throw RegionLimitReached(owner: owner, limit: .all) }
        }
        if let existing { removeWatch(existing) }
        let number = insert(RegionWatch(owner: owner, region: region, added: now))
        var event: RegionEvent?
        if let fix, fix.isValid, var watch = watches[number] {
            event = watch.observe(fix)
            if watch.phase != .undecided { update(number, watch) }
        }
        dropStaleDeadlines()
        return event
    }

    /// RemoveRegion: stops watching `id` of `owner`; false when the owner has no such region.
    public mutating func remove(_ id: String, for owner: RegionOwner) -> Bool {
        guard let number = numbers[owner]?[id] else { return false }
        removeWatch(number)
        dropStaleDeadlines()
        return true
    }

    /// Removes every region of `owner` and its pending events (a revoked grant); the removal to report, or nil
    /// when the owner had no regions.
    public mutating func removeAll(of owner: RegionOwner, reason: RegionRemoval.Reason) -> RegionRemoval? {
        setPending(nil, for: owner)
        guard let owned = numbers[owner] else { return nil }
        for number in owned.values { removeWatch(number) }
        dropStaleDeadlines()
        return RegionRemoval(owner: owner, ids: owned.keys.sorted(), reason: reason)
    }

    /// Decides the regions by a fix; returns the events to report, ordered by owner and id.
    ///
    /// Owners for whom `approximate` is true (an approximate grant) are decided by `coarsened` instead, and not
    /// at all when it is nil. A fix that is not ``RegionFix/isValid`` decides nothing.
    public mutating func observe(
        _ fix: RegionFix, coarsened: RegionFix?, approximate: (RegionOwner) -> Bool
    ) -> [RegionEvent] {
        let precise = fix.isValid ? fix : nil
        let coarse = coarsened.flatMap { $0.isValid ? $0 : nil }
        var candidates = notOutside
        if let precise { candidates.formUnion(grid.candidates(containing: precise.latitude, precise.longitude)) }
        if let coarse { candidates.formUnion(grid.candidates(containing: coarse.latitude, coarse.longitude)) }
        var isApproximate: [RegionOwner: Bool] = [:]
        var events: [RegionEvent] = []
        for number in candidates {
            guard var watch = watches[number] else { continue }
            let approximateOwner = isApproximate[watch.owner] ?? approximate(watch.owner)
            isApproximate[watch.owner] = approximateOwner
            guard let deciding = approximateOwner ? coarse : precise else { continue }
            let before = watch.phase
            let event = watch.observe(deciding)
            if watch.phase != before { update(number, watch) }
            if let event { events.append(event) }
        }
        dropStaleDeadlines()
        return events.sorted { ($0.owner, $0.id) < ($1.owner, $1.id) }
    }

    /// Time passed with no fix, up to `now`: dwell times reached (dwelling), undecided regions past
    /// ``RegionRule/undecidedTimeout`` (unknown, once) and expiries (removed). Returns the events in the order
    /// they came due, and the removals by owner, each owner's ids sorted.
    public mutating func timePassed(now: WallTime) -> (events: [RegionEvent], removals: [RegionRemoval]) {
        var events: [RegionEvent] = []
        var expired: [RegionOwner: [String]] = [:]
        while let entry = deadlines.next, entry.time <= now {
            _ = deadlines.removeNext()
            guard var watch = watches[entry.number], deadline(entry.kind, of: watch) == entry.time else { continue }
            switch entry.kind {
            case .expiry:
                expired[watch.owner, default: []].append(watch.region.id)
                removeWatch(entry.number)
            case .dwell:
                if let event = watch.dwellReached() { events.append(event) }
                update(entry.number, watch)
            case .undecided:
                if let event = watch.undecidedTimedOut() { events.append(event) }
                update(entry.number, watch)
            }
        }
        dropStaleDeadlines()
        let removals = expired.keys.sorted().map {
            RegionRemoval(owner: $0, ids: expired[$0]!.sorted(), reason: .expired)
        }
        return (events, removals)
    }

    /// The next time ``timePassed(now:)`` has something to do; nil when nothing will ever be due without a fix or
    /// an added region.
    public var nextDeadline: WallTime? { deadlines.next?.time }

    /// No provider can decide any region any more: every region not already unknown becomes unknown. Returns the
    /// events, ordered by owner and id.
    public mutating func undecidable(now: WallTime) -> [RegionEvent] {
        var events: [RegionEvent] = []
        for (number, var watch) in watches {
            guard let event = watch.becomeUndecidable(now: now) else { continue }
            events.append(event)
            update(number, watch)
        }
        dropStaleDeadlines()
        return events.sorted { ($0.owner, $0.id) < ($1.owner, $1.id) }
    }

    /// Keeps `events` for their owners, who have no client now; returns, by owner, how many older events were
    /// dropped to keep each owner at ``pendingLimit`` and each user at ``pendingLimitPerUser`` (an owner's own
    /// oldest go first; an owner with none kept loses the new one).
    public mutating func queue(_ events: [RegionEvent]) -> [RegionOwner: Int] {
        var dropped: [RegionOwner: Int] = [:]
        for event in events {
            var kept = pending[event.owner] ?? []
            kept.append(event)
            var excess = max(0, kept.count - RegionMonitor.pendingLimit)
            if excess == 0, (users[event.owner.user]?.events ?? 0) + 1 > RegionMonitor.pendingLimitPerUser {
                excess = 1
            }
            if excess > 0 {
                kept.removeFirst(excess)
                dropped[event.owner, default: 0] += excess
            }
            setPending(kept.isEmpty ? nil : kept, for: event.owner)
        }
        return dropped
    }

    /// The events kept for `owner`, oldest first; they are forgotten.
    public mutating func takePending(for owner: RegionOwner) -> [RegionEvent] {
        guard let events = pending[owner] else { return [] }
        setPending(nil, for: owner)
        return events
    }

    // MARK: - Restoring

    /// Adds a region as stored; the file checked that it is new and within the owner's limit.
    mutating func restore(_ watch: RegionWatch) {
        insert(watch)
        dropStaleDeadlines()
    }

    /// Sets the pending events of an owner as stored.
    mutating func restorePending(_ events: [RegionEvent], for owner: RegionOwner) {
        setPending(events.isEmpty ? nil : events, for: owner)
    }

    /// Takes in what `other` (one file's) keeps, within the limits: a region past its user's or the monitor's
    /// limit, or already kept, is left out, as is a pending event past its user's. Returns how many of each were
    /// left out.
    public mutating func adopt(_ other: RegionMonitor) -> (regions: Int, events: Int) {
        var leftOut = 0
        for owner in other.owners {
            for (id, number) in (other.numbers[owner] ?? [:]).sorted(by: { $0.key < $1.key }) {
                guard let watch = other.watches[number], numbers[owner]?[id] == nil,
                    numbers[owner]?.count ?? 0 < Region.limitPerOwner,
                    users[owner.user]?.regions ?? 0 < Region.limitPerUser, watches.count < Region.limitInAll
                else {
                    leftOut += 1
                    continue
                }
                restore(watch)
            }
        }
        var eventsLeftOut = 0
        for (owner, events) in other.pending.sorted(by: { $0.key < $1.key }) {
            let existing = pending[owner] ?? []
            let room = min(
                RegionMonitor.pendingLimitPerUser - (users[owner.user]?.events ?? 0),
                RegionMonitor.pendingLimit - existing.count)
            let taken = Array(events.suffix(max(0, room)))
            eventsLeftOut += events.count - taken.count
            if !taken.isEmpty { setPending(existing + taken, for: owner) }
        }
        return (leftOut, eventsLeftOut)
    }

    /// How many regions `owner` has.
    func regionCount(of owner: RegionOwner) -> Int { numbers[owner]?.count ?? 0 }

    /// How many regions of `owner` are too small for city fixes to decide (the power rule).
    func smallRegionCount(of owner: RegionOwner) -> Int { smallRegions[owner] ?? 0 }

    /// The regions whose boundary may lie within `distance` metres outside `position`, or that may contain it.
    func candidates(within distance: Double, of position: RegionFix) -> Set<UInt64> {
        grid.candidates(within: distance, of: position.latitude, position.longitude)
    }

    // MARK: - Bookkeeping

    @discardableResult
    private mutating func insert(_ watch: RegionWatch) -> UInt64 {
        lastNumber += 1
        let number = lastNumber
        watches[number] = watch
        numbers[watch.owner, default: [:]][watch.region.id] = number
        users[watch.owner.user, default: UserShare()].regions += 1
        noteChange(of: watch.owner)
        if watch.phase != .outside { notOutside.insert(number) }
        if RegionMonitor.isSmall(watch.region) { smallRegions[watch.owner, default: 0] += 1 }
        grid.insert(
            number, latitude: watch.region.latitude, longitude: watch.region.longitude, radius: watch.region.radius)
        schedule(RegionDeadlines.Kind.allCases, of: number, watch)
        return number
    }

    private mutating func removeWatch(_ number: UInt64) {
        guard let watch = watches.removeValue(forKey: number) else { return }
        numbers[watch.owner]?[watch.region.id] = nil
        if numbers[watch.owner]?.isEmpty == true { numbers[watch.owner] = nil }
        users[watch.owner.user]?.regions -= 1
        noteChange(of: watch.owner)
        notOutside.remove(number)
        if RegionMonitor.isSmall(watch.region) {
            smallRegions[watch.owner]! -= 1
            if smallRegions[watch.owner] == 0 { smallRegions[watch.owner] = nil }
        }
        grid.remove(
            number, latitude: watch.region.latitude, longitude: watch.region.longitude, radius: watch.region.radius)
    }

    /// Stores a watch whose phase changed, keeping the set of regions not outside and the deadlines (the expiry
    /// never changes).
    private mutating func update(_ number: UInt64, _ watch: RegionWatch) {
        changedUsers.insert(watch.owner.user)
        watches[number] = watch
        if watch.phase == .outside { notOutside.remove(number) } else { notOutside.insert(number) }
        schedule([.dwell, .undecided], of: number, watch)
    }

    /// Sets the pending events of `owner` (nil: none), keeping its user's count.
    private mutating func setPending(_ events: [RegionEvent]?, for owner: RegionOwner) {
        let before = pending[owner]?.count ?? 0
        guard before > 0 || events != nil else { return }
        pending[owner] = events
        users[owner.user, default: UserShare()].events += (events?.count ?? 0) - before
        noteChange(of: owner)
    }

    /// Notes that `owner`'s user changed, and whether `owner` still keeps anything.
    private mutating func noteChange(of owner: RegionOwner) {
        changedUsers.insert(owner.user)
        if numbers[owner] != nil || pending[owner] != nil {
            users[owner.user, default: UserShare()].owners.insert(owner)
        } else if users[owner.user]?.owners.remove(owner) != nil, users[owner.user]?.owners.isEmpty == true {
            users[owner.user] = nil
        }
    }

    /// Adds the deadlines of `kinds` that `watch` has now.
    private mutating func schedule(_ kinds: [RegionDeadlines.Kind], of number: UInt64, _ watch: RegionWatch) {
        for kind in kinds {
            if let time = deadline(kind, of: watch) {
                deadlines.insert(RegionDeadlines.Entry(time: time, number: number, kind: kind))
            }
        }
    }

    private func deadline(_ kind: RegionDeadlines.Kind, of watch: RegionWatch) -> WallTime? {
        switch kind {
        case .expiry: watch.region.options.expires
        case .dwell: watch.dwellDeadline
        case .undecided: watch.undecidedDeadline
        }
    }

    /// Pops the entries at the heap's top that no longer hold, so that ``nextDeadline`` is live; rebuilds the
    /// heap when most of it is stale.
    private mutating func dropStaleDeadlines() {
        if deadlines.count > 2 * watches.count + 64 {
            deadlines.rebuild(
                watches.flatMap { number, watch in
                    RegionDeadlines.Kind.allCases.compactMap { kind in
                        deadline(kind, of: watch).map { RegionDeadlines.Entry(time: $0, number: number, kind: kind) }
                    }
                })
        }
        while let entry = deadlines.next {
            if let watch = watches[entry.number], deadline(entry.kind, of: watch) == entry.time { break }
            _ = deadlines.removeNext()
        }
    }
}
