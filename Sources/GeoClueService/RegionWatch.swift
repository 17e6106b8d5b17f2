import DBus
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsStorage

/// The regions the apps watch (geofencing), decided by the service from the fixes it has anyway: the core's
/// ``RegionMonitor`` fed with every fix, its changes sent as `io.github.whereabouts1.Client.RegionChanged` to the
/// connections of the app's clients, or kept for `PendingRegionEvents` while the app has none; its deadlines (dwell,
/// the undecided timeout, expiry) on the service's timers; the level it needs added to the providers' demand; the
/// regions and pending events kept in a file per user beside the grants (``RegionStore``).
///
/// **Writing.** Only the users whose regions or events changed are written, each user's file alone, off the bus
/// thread. What the apps did (a region added or removed, pending events kept or read, expiries) is written
/// ``changeSaveDelay`` later, with whatever else changes meanwhile, so that a user adding regions in a loop costs
/// that user's file once a second at most; states the fixes moved are written ``stateSaveDelay`` later, so that a
/// drive through thousands of regions costs a write every few seconds, not one a fix (a crash loses at most that
/// much, which the app adds again or the next fix decides again; a stop writes everything first).
///
/// **Cost.** `AddRegion` decides the new region alone and raises the demand by what it needs; what the other
/// regions need is worked out again once per turn of the loop at most, however many calls came in it.
///
/// An owner whose grant is approximate is decided on the fix coarsened to city level, as its clients would see it,
/// and never asks for more than city level.
@BusActor
final class RegionWatch {
    private unowned let service: GeoClueService
    private let store: RegionStore?
    /// How long what the apps changed waits to be written.
    static let changeSaveDelay: Duration = .seconds(1)
    /// How long states moved by fixes wait to be written.
    static let stateSaveDelay: Duration = .seconds(10)

    private(set) var monitor = RegionMonitor()
    private var pendingSave: (at: MonotonicTime, timer: ScheduledTimer)?
    private var deadline: (at: WallTime, timer: ScheduledTimer)?
    /// The full count of what the regions need, due at the next turn of the loop.
    private var demandRecount: ScheduledTimer?
    /// The save again of the users whose file could not be written.
    private var retry: FailedWriteRetry?
    /// "Pending events dropped" lines, a few per user every 10 s.
    private var droppedLines = RateLimiter<UInt32>()
    /// Called with whether any region or pending event is kept, when that changes (the idle exit waits while one
    /// is).
    var onKeepingChanged: (@BusActor (Bool) -> Void)?
    private var wasKeeping = false

    /// The regions kept in `store`, watched for `service`.
    init(service: GeoClueService, store: RegionStore?) {
        self.service = service
        self.store = store
        if let store { monitor = store.load(now: service.clock.wallNow) { service.logger.error($0) } }
        wasKeeping = !monitor.isEmpty
        retry = store.map { store in
            FailedWriteRetry(store: store, timers: service.timers, delay: Self.stateSaveDelay) { [weak self] failed in
                // Saved again with whatever they keep by then.
                self?.monitor.noteChanged(failed)
                self?.saveNow()
            }
        }
    }

    /// True while any region or pending event is kept.
    var isKeeping: Bool { !monitor.isEmpty }

    /// Starts the deadlines and the demand of the regions loaded.
    func start() {
        if monitor.count > 0 {
            service.logger.info("regions: watching \(monitor.count) for \(monitor.owners.count) app(s)")
        }
        timePassed()
        updateDemand()
    }

    /// True when `owner` holds an approximate grant: its regions are decided on coarsened fixes.
    private func isApproximate(_ owner: RegionOwner) -> Bool {
        guard
            case .granted(_, let approximate) = service.grants.decision(
                uid: owner.user, app: owner.app, verified: owner.verified)
        else {
            return false
        }
        return approximate
    }

    // MARK: Changes from the clients

    /// `AddRegion`, once validated and authorised: watches `region`, deciding it at once from the latest fix when
    /// that is recent (coarsened to city for an approximate owner). The work is this region's: the others are
    /// neither decided again nor written.
    func add(_ region: Region, for owner: RegionOwner) throws(RegionLimitReached) {
        let now = service.clock.wallNow
        let approximate = isApproximate(owner)
        var deciding: RegionFix?
        if service.servicesEnabled, let fix = service.lastFix, now.since(fix.timestamp) < RegionRule.undecidedTimeout {
            deciding = RegionFix(approximate ? coarsen(fix, to: .city) : fix)
        }
        if let event = try monitor.add(region, for: owner, now: now, decidedBy: deciding) { report([event]) }
        if service.servicesEnabled {
            let needed = RegionMonitor.neededLevel(for: region, at: service.lastFix.map(RegionFix.init))
            let level = approximate ? min(needed, .city) : needed
            if level > service.activity.regionDemand ?? .none { service.activity.regionDemand = level }
        }
        changed(demand: .later)
    }

    /// `RemoveRegion`: false when `owner` has no region `id`.
    func remove(_ id: String, for owner: RegionOwner) -> Bool {
        guard monitor.remove(id, for: owner) else { return false }
        changed(demand: .later)
        return true
    }

    /// `PendingRegionEvents`: what happened while `owner` had no client, oldest first, forgotten once read.
    func takePending(for owner: RegionOwner) -> [RegionEvent] {
        let events = monitor.takePending(for: owner)
        if !events.isEmpty { changed(demand: .later) }
        return events
    }

    /// The grant of `owner` was revoked: its regions go, and its clients hear `RegionsRemoved`.
    func revoked(_ owner: RegionOwner) {
        // An owner with pending events and no region loses the events, which is a change too.
        if let removal = monitor.removeAll(of: owner, reason: .authorisationRevoked) {
            service.logger.notice(
                "regions: \(removal.ids.count) of '\(owner.app)' (user \(owner.user)) removed with its grant")
            announce(removal)
        }
        changed()
    }

    // MARK: Changes from the providers

    /// A fix the providers produced (before any client's coarsening).
    func observe(_ fix: Fix) {
        guard monitor.count > 0, service.servicesEnabled else { return }
        let precise = RegionFix(fix)
        let coarse = RegionFix(coarsen(fix, to: .city))
        report(monitor.observe(precise, coarsened: coarse, approximate: isApproximate))
        changed(saveDelay: Self.stateSaveDelay)
    }

    /// The providers can no longer deliver anything: every region's state becomes unknown.
    func undecidable() {
        guard monitor.count > 0 else { return }
        report(monitor.undecidable(now: service.clock.wallNow))
        changed(saveDelay: Self.stateSaveDelay)
    }

    // MARK: Telling the apps

    /// Sends `member` with `arguments` from every client of `owner`'s app run by its user, verified as the owner
    /// is or claiming as it does, to the client's connection; false when there is none.
    private func send(_ member: String, _ arguments: [DBusValue], to owner: RegionOwner) -> Bool {
        let clients = service.clients(of: owner.app, uid: owner.user).filter { $0.app?.isVerified == owner.verified }
        for client in clients {
            service.connection.emitSignal(
                path: client.path, interface: Whereabouts.clientInterface, member: member, arguments: arguments,
                destination: client.owner)
        }
        return !clients.isEmpty
    }

    private func report(_ events: [RegionEvent]) {
        var unheard: [RegionEvent] = []
        for event in events where !send("RegionChanged", event.busValues, to: event.owner) {
            unheard.append(event)
        }
        guard !unheard.isEmpty else { return }
        for (owner, dropped) in monitor.queue(unheard).sorted(by: { $0.key < $1.key }) {
            let line =
                "regions: \(dropped) pending event(s) of '\(owner.app)' (user \(owner.user)) dropped, the oldest, past "
                + "\(RegionMonitor.pendingLimit) per app or \(RegionMonitor.pendingLimitPerUser) per user"
            if let limited = droppedLines.line(line, for: owner.user, now: service.clock.monotonicNow) {
                service.logger.warning(limited)
            }
        }
    }

    private func announce(_ removal: RegionRemoval) {
        _ = send("RegionsRemoved", [.strings(removal.ids), .string(removal.reason.rawValue)], to: removal.owner)
    }

    // MARK: Deadlines, demand, the file

    /// When the demand is worked out again.
    private enum Recount {
        case now, later
    }

    /// After any change: the users' files (``changeSaveDelay`` from now, or `saveDelay`), the next deadline, the
    /// demand, and whether anything is kept.
    private func changed(saveDelay: Duration = RegionWatch.changeSaveDelay, demand: Recount = .now) {
        save(after: saveDelay)
        armDeadline()
        switch demand {
        case .now: updateDemand()
        case .later: recountDemandSoon()
        }
        if isKeeping != wasKeeping {
            wasKeeping = isKeeping
            onKeepingChanged?(wasKeeping)
        }
    }

    private func timePassed() {
        let (events, removals) = monitor.timePassed(now: service.clock.wallNow)
        report(events)
        for removal in removals {
            service.logger.info(
                "regions: \(removal.ids.count) of '\(removal.owner.app)' (user \(removal.owner.user)) expired")
            announce(removal)
        }
        changed(demand: removals.isEmpty ? .later : .now)
    }

    private func armDeadline() {
        let next = monitor.nextDeadline
        guard next != deadline?.at else { return }
        if let deadline { service.timers.cancelTimer(deadline.timer) }
        deadline = nil
        guard let next else { return }
        let timer = service.timers.scheduleOnBus(after: max(.zero, next.since(service.clock.wallNow))) { [weak self] in
            guard let self else { return }
            self.deadline = nil
            self.timePassed()
        }
        deadline = (next, timer)
    }

    /// Works the demand out again at the next turn of the loop, once for all the changes made until then; at once
    /// when no region is left, which costs nothing.
    private func recountDemandSoon() {
        guard monitor.count > 0 else {
            updateDemand()
            return
        }
        guard demandRecount == nil else { return }
        demandRecount = service.timers.scheduleOnBus(after: .zero) { [weak self] in
            guard let self else { return }
            self.demandRecount = nil
            self.updateDemand()
        }
    }

    /// The level the regions need: the coarsest that can decide the nearest boundary (``RegionMonitor/neededLevel``),
    /// city at most for approximate owners; none while location services are off.
    func updateDemand() {
        guard service.servicesEnabled, monitor.count > 0 else {
            service.activity.regionDemand = nil
            return
        }
        let position = service.lastFix.map(RegionFix.init)
        let precise = monitor.neededLevel(at: position) { !self.isApproximate($0) }
        let approximate = monitor.neededLevel(at: position, include: isApproximate).map { min($0, .city) }
        service.activity.regionDemand = [precise, approximate].compactMap { $0 }.max()
    }

    /// Hands the files of the users whose regions or events changed since the last time to the store: a fix that
    /// moves no region's state costs no write, and a user's change costs that user's file alone.
    func saveNow() {
        if let pendingSave { service.timers.cancelTimer(pendingSave.timer) }
        pendingSave = nil
        let users = monitor.takeChangedUsers()
        guard !users.isEmpty, let store else { return }
        store.save(users.map { monitor.records(ofUser: $0) })
    }

    /// Writes the changed users' files `delay` from now, with whatever else changes meanwhile, or sooner if a write
    /// is due sooner already.
    private func save(after delay: Duration) {
        guard !monitor.changedUsers.isEmpty else { return }
        let due = service.clock.monotonicNow + delay
        if let pendingSave {
            guard due < pendingSave.at else { return }
            service.timers.cancelTimer(pendingSave.timer)
        }
        let timer = service.timers.scheduleOnBus(after: delay) { [weak self] in
            guard let self else { return }
            self.pendingSave = nil
            self.saveNow()
        }
        pendingSave = (due, timer)
    }
}

extension RegionEvent {
    /// The arguments of `RegionChanged` (and a row of `PendingRegionEvents`): id, state, Unix milliseconds, the
    /// deciding fix's latitude, longitude and accuracy (NaN for `unknown`).
    var busValues: [DBusValue] {
        [
            .string(id), .string(state.rawValue), .uint64(UInt64(max(0, timestamp.microseconds / 1000))),
            .double(fix?.latitude ?? .nan), .double(fix?.longitude ?? .nan), .double(fix?.accuracy ?? .nan),
        ]
    }
}

extension RegionFix {
    /// The position of `fix`, as regions see it.
    init(_ fix: Fix) {
        self.init(
            latitude: fix.latitude, longitude: fix.longitude, accuracy: fix.horizontalAccuracy,
            timestamp: fix.timestamp)
    }
}
