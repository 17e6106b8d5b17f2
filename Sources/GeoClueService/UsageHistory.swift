import DBus
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsStorage

/// Each user's history of location use (``HistoryBook``): an entry for each app's use when it ends, one for each
/// request to a positioning service in the records of the users whose apps needed it, and the uses still running,
/// shown as such when read (`io.github.whereabouts1.Manager.GetHistory`).
///
/// **Writing.** What is recorded is handed to the store ``writeDelay`` later, with whatever else is recorded
/// meanwhile, off the bus thread (``HistoryStore``): an entry costs an appended line, and a user's file is written
/// whole only past the book's margins. When the last use ends it is handed over at once, so that an idle daemon has
/// nothing left to do (a second later it hands its code pages back). A stop records the running uses and writes
/// everything first.
@BusActor
final class UsageHistory {
    private unowned let service: GeoClueService
    private let store: HistoryStore?
    /// How long what is recorded waits to be written.
    static let writeDelay: Duration = .seconds(2)
    /// How long after a failed write the file is written again.
    static let retryDelay: Duration = .seconds(10)

    private var book = HistoryBook()
    /// The uses going on, by client id.
    private var running: [UInt32: RunningUse] = [:]
    private var pendingWrite: ScheduledTimer?
    private var expiry: ScheduledTimer?
    /// The look, after a write, for users whose file could not be written.
    private var failureCheck: ScheduledTimer?

    /// One client's use while it goes on.
    private struct RunningUse {
        var user: UInt32
        var use: AppUse
        var providers: Set<ProviderKind> = []
        /// The level the providers must serve for it (``ClientObject/demandedLevel``).
        var demanded: AccuracyLevel

        /// The use as it stands, stopped at `stopped` (nil: going on).
        func entry(stopped: WallTime?) -> AppUse {
            AppUse(
                app: use.app, started: use.started, stopped: stopped, level: use.level, approximate: use.approximate,
                providers: providers)
        }
    }

    /// The histories kept in `store`, recorded for `service`.
    init(service: GeoClueService, store: HistoryStore?) {
        self.service = service
        self.store = store
        if let store { book = store.load(now: service.clock.wallNow) { service.logger.error($0) } }
    }

    /// Writes at once what loading found to be written again (a torn line, entries expired or left out).
    func start() { write(after: .zero) }

    /// Follows `client` after anything about its use changed: a use begins when it starts needing fixes, takes the
    /// finest level it is served at, and ends (an entry) when it no longer needs them.
    func clientChanged(_ client: ClientObject, user: UInt32?) {
        guard client.isServing, let user, let app = client.app else {
            clientEnded(client.id)
            return
        }
        let level = client.life.servedLevel
        let approximate = client.life.shownLevel != .exact
        if var use = running[client.id] {
            use.use.level = max(use.use.level, level)
            use.use.approximate = use.use.approximate && approximate
            use.demanded = client.demandedLevel
            running[client.id] = use
            return
        }
        running[client.id] = RunningUse(
            user: user,
            use: AppUse(
                app: app.description, started: service.clock.wallNow, stopped: nil, level: level,
                approximate: approximate, providers: []),
            demanded: client.demandedLevel)
    }

    /// The client `id` was given a fix of `provider`.
    func served(_ id: UInt32, from provider: ProviderKind) {
        running[id]?.providers.insert(provider)
    }

    /// The client `id` no longer needs fixes, or is gone: its use, if one was going on, is recorded.
    func clientEnded(_ id: UInt32) {
        guard let ended = running.removeValue(forKey: id) else { return }
        let now = service.clock.wallNow
        book.record(.use(ended.entry(stopped: now)), user: ended.user, now: now)
        if running.isEmpty { writeNow() } else { write(after: Self.writeDelay) }
    }

    /// Records `lookup`, made by a provider that runs for clients served at `level` or finer, for each user whose
    /// running uses needed it, naming that user's apps; a lookup no client needed (for the regions alone) is
    /// recorded for the users whose apps watch regions, each named `verified:ID` or `claimed:ID`.
    func record(_ lookup: NetworkLookup, neededLevel level: AccuracyLevel) {
        var apps: [UInt32: Set<String>] = [:]
        for use in running.values where use.demanded >= level { apps[use.user, default: []].insert(use.use.app) }
        if apps.isEmpty, service.activity.regionDemand.map({ $0 >= level }) == true {
            for owner in service.regions.monitor.owners {
                apps[owner.user, default: []].insert("\(owner.verified ? "verified" : "claimed"):\(owner.app)")
            }
        }
        guard !apps.isEmpty else { return }
        for (user, names) in apps { book.record(.lookup(lookup.attributed(to: names)), user: user, now: lookup.time) }
        write(after: Self.writeDelay)
    }

    /// The entries of `user` that ended at or after `since`, then the uses going on.
    func entries(ofUser user: UInt32, since: WallTime) -> [HistoryEntry] {
        let now = service.clock.wallNow
        let going = running.values.filter { $0.user == user }.sorted { $0.use.started < $1.use.started }
        return book.entries(ofUser: user, since: since, now: now) + going.map { .use($0.entry(stopped: nil)) }
    }

    /// The users who have entries or uses going on, sorted.
    var users: [UInt32] { Set(book.keepingUsers + running.values.map(\.user)).sorted() }

    /// Forgets the history of `user` (`ClearHistory`); its uses going on count from now.
    func clear(user: UInt32) {
        book.clear(user: user)
        let now = service.clock.wallNow
        for (id, use) in running where use.user == user {
            running[id]?.use.started = now
            running[id]?.providers = []
        }
        writeNow()
    }

    /// Records every use going on as ended now and hands everything to the store, for a process about to end.
    func saveNow() {
        for id in running.keys.sorted() { clientEnded(id) }
        writeNow()
    }

    /// Hands what is to be written to the store, and arms the timer that writes again when a line expires.
    private func writeNow() {
        if let pendingWrite { service.timers.cancelTimer(pendingWrite) }
        pendingWrite = nil
        guard let store else { return }
        for user in store.takeFailedUsers() { book.writeFailed(ofUser: user) }
        let writes = book.takeWrites(now: service.clock.wallNow)
        store.save(writes)
        if !writes.isEmpty { checkForFailedWrites(of: store) }
        if let expiry { service.timers.cancelTimer(expiry) }
        expiry = book.nextExpiry.map { due in
            service.timers.scheduleOnBus(after: max(.seconds(1), due.since(service.clock.wallNow))) { [weak self] in
                self?.expiry = nil
                self?.writeNow()
            }
        }
    }

    /// Writes `delay` from now, with whatever else is recorded meanwhile, unless a write is due already.
    private func write(after delay: Duration) {
        guard store != nil, pendingWrite == nil else { return }
        pendingWrite = service.timers.scheduleOnBus(after: delay) { [weak self] in
            self?.pendingWrite = nil
            self?.writeNow()
        }
    }

    /// ``retryDelay`` after a write, has the files that could not be written (a full disk) written whole again;
    /// while writes fail, so every ``retryDelay``.
    private func checkForFailedWrites(of store: HistoryStore) {
        guard failureCheck == nil else { return }
        failureCheck = service.timers.scheduleOnBus(after: Self.retryDelay) { [weak self] in
            guard let self else { return }
            self.failureCheck = nil
            let failed = store.takeFailedUsers()
            guard !failed.isEmpty else { return }
            for user in failed { self.book.writeFailed(ofUser: user) }
            self.write(after: .zero)
        }
    }
}
