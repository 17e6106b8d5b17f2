import DBus
import Loop
import WhereaboutsCore
import WhereaboutsStorage

/// The regions the apps watch (geofencing), decided by the service from the fixes it has anyway: the core's
/// ``RegionMonitor`` fed with every fix, its changes sent as `io.github.whereabouts1.Client.RegionChanged` to the
/// connections of the app's clients, or kept for `PendingRegionEvents` while the app has none; its deadlines (dwell,
/// the undecided timeout, expiry) on the service's timers; the level it needs added to the providers' demand; the
/// regions and pending events kept in a file beside the grants.
///
/// **Writing.** What the apps did (a region added or removed, pending events kept or read, expiries) is handed to
/// the file at once; states the fixes moved are written ``stateSaveDelay`` later, together, so that a drive
/// through thousands of regions costs a write every few seconds, not one a fix (a crash loses at most that
/// much of the states, which the next fix decides again).
///
/// An owner whose grant is approximate is decided on the fix coarsened to city level, as its clients would see it,
/// and never asks for more than city level.
@BusActor
final class RegionWatch {
    private unowned let service: GeoClueService
    private let file: RegionStoreFile?
    /// How long states moved by fixes wait to be written.
    static let stateSaveDelay: Duration = .seconds(10)

    private(set) var monitor = RegionMonitor()
    private var pendingSave: ScheduledTimer?
    private var deadline: (at: WallTime, timer: ScheduledTimer)?
    /// The monitor's ``RegionMonitor/revision`` last handed to the file.
    private var savedRevision: UInt64 = 0

    /// The regions kept in `file`, watched for `service`.
    init(service: GeoClueService, file: RegionStoreFile?) {
        self.service = service
        self.file = file
        if let file { monitor = file.load(now: service.clock.wallNow) { service.logger.error($0) } }
        savedRevision = monitor.revision
    }

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
    /// that is recent.
    func add(_ region: Region, for owner: RegionOwner) throws(RegionLimitReached) {
        let now = service.clock.wallNow
        try monitor.add(region, for: owner, now: now)
        if let fix = service.lastFix, now.since(fix.timestamp) < RegionRule.undecidedTimeout { observe(fix) }
        changed()
    }

    /// `RemoveRegion`: false when `owner` has no region `id`.
    func remove(_ id: String, for owner: RegionOwner) -> Bool {
        guard monitor.remove(id, for: owner) else { return false }
        changed()
        return true
    }

    /// `PendingRegionEvents`: what happened while `owner` had no client, oldest first, forgotten once read.
    func takePending(for owner: RegionOwner) -> [RegionEvent] {
        let events = monitor.takePending(for: owner)
        saveNow()
        return events
    }

    /// The grant of `owner` was revoked: its regions go, and its clients hear `RegionsRemoved`.
    func revoked(_ owner: RegionOwner) {
        guard let removal = monitor.removeAll(of: owner, reason: .authorisationRevoked) else { return }
        service.logger.notice(
            "regions: \(removal.ids.count) of '\(owner.app)' (user \(owner.user)) removed with its grant")
        announce(removal)
        changed()
    }

    // MARK: Changes from the providers

    /// A fix the providers produced (before any client's coarsening).
    func observe(_ fix: Fix) {
        guard monitor.count > 0, service.servicesEnabled else { return }
        let precise = RegionFix(fix)
        let coarse = RegionFix(coarsen(fix, to: .city))
        report(monitor.observe(precise, coarsened: coarse, approximate: isApproximate))
        changed(saving: .soon)
    }

    /// The providers can no longer deliver anything: every region's state becomes unknown.
    func undecidable() {
        guard monitor.count > 0 else { return }
        report(monitor.undecidable(now: service.clock.wallNow))
        changed(saving: .soon)
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
        let dropped = monitor.queue(unheard)
        if dropped > 0 {
            service.logger.warning(
                "regions: \(dropped) pending event(s) dropped, the oldest, past \(RegionMonitor.pendingLimit) per app")
        }
    }

    private func announce(_ removal: RegionRemoval) {
        _ = send("RegionsRemoved", [.strings(removal.ids), .string(removal.reason.rawValue)], to: removal.owner)
    }

    // MARK: Deadlines, demand, the file

    /// When a change is written.
    private enum Saving {
        case now, soon
    }

    /// After any change: the file, the next deadline, the demand.
    private func changed(saving: Saving = .now) {
        switch saving {
        case .now: saveNow()
        case .soon: saveSoon()
        }
        armDeadline()
        updateDemand()
    }

    private func timePassed() {
        let (events, removals) = monitor.timePassed(now: service.clock.wallNow)
        report(events)
        for removal in removals {
            service.logger.info("regions: \(removal.ids.count) of '\(removal.owner.app)' expired")
            announce(removal)
        }
        saveNow()
        armDeadline()
        if !removals.isEmpty { updateDemand() }
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

    /// Hands the regions to the file when something it keeps changed since the last time: a fix that moves no
    /// region's state costs no write.
    func saveNow() {
        if let pendingSave { service.timers.cancelTimer(pendingSave) }
        pendingSave = nil
        guard monitor.revision != savedRevision else { return }
        savedRevision = monitor.revision
        file?.save(monitor)
    }

    /// Writes the regions ``stateSaveDelay`` from now, with whatever else changes meanwhile.
    private func saveSoon() {
        guard pendingSave == nil, monitor.revision != savedRevision else { return }
        pendingSave = service.timers.scheduleOnBus(after: Self.stateSaveDelay) { [weak self] in
            guard let self else { return }
            self.pendingSave = nil
            self.saveNow()
        }
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
