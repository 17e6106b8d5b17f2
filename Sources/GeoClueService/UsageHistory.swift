import DBus
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsStorage

/// Each user's history of location use (``HistoryBook``): an entry for each app's use when it ends, one for each
/// request to a positioning service in the records of the users whose apps needed it, and the uses still running,
/// shown as such when read (`io.github.whereabouts1.Manager.GetHistory`).
///
/// **A use** is one app's, of one user: it begins when the first of the app's clients needs fixes and ends when the
/// last no longer does, so an app with many clients at once (a browser's tabs) is one entry, and a burst of a
/// thousand clients costs the book one entry, not a thousand.
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
    /// The uses going on, by user and app.
    private var running: [UseKey: RunningUse] = [:]
    /// The use each client needing fixes counts in, and the level the providers must serve for it
    /// (``ClientObject/demandedLevel``), by client id.
    private var clientUses: [UInt32: (key: UseKey, demanded: AccuracyLevel)] = [:]
    private var pendingWrite: ScheduledTimer?
    private var expiry: ScheduledTimer?
    /// The write again, whole, of the files that could not be written.
    private var retry: FailedWriteRetry?

    /// Whose a use is.
    private struct UseKey: Hashable {
        var user: UInt32
        var app: String
    }

    /// One app's use while it goes on.
    private struct RunningUse {
        var use: AppUse
        var providers: Set<ProviderKind> = []
        /// How many of the app's clients need fixes.
        var clients = 0

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
        retry = store.map { store in
            FailedWriteRetry(store: store, timers: service.timers, delay: Self.retryDelay) { [weak self] failed in
                for user in failed { self?.book.writeFailed(ofUser: user) }
                self?.write(after: .zero)
            }
        }
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
        let key = UseKey(user: user, app: app.description)
        if let counted = clientUses[client.id]?.key, counted != key { clientEnded(client.id) }
        let joins = clientUses[client.id] == nil
        clientUses[client.id] = (key, client.demandedLevel)
        let level = client.life.servedLevel
        let approximate = client.life.shownLevel != .exact
        if var use = running[key] {
            use.use.level = max(use.use.level, level)
            use.use.approximate = use.use.approximate && approximate
            if joins { use.clients += 1 }
            running[key] = use
            return
        }
        running[key] = RunningUse(
            use: AppUse(
                app: key.app, started: service.clock.wallNow, stopped: nil, level: level, approximate: approximate,
                providers: []),
            clients: 1)
    }

    /// The client `id` was given a fix of `provider`.
    func served(_ id: UInt32, from provider: ProviderKind) {
        guard let key = clientUses[id]?.key else { return }
        running[key]?.providers.insert(provider)
    }

    /// The client `id` no longer needs fixes, or is gone: its app's use, if it was the last client in it, is
    /// recorded.
    func clientEnded(_ id: UInt32) {
        guard let key = clientUses.removeValue(forKey: id)?.key, var use = running[key] else { return }
        clientUses.releaseUnusedCapacity()
        use.clients -= 1
        guard use.clients == 0 else {
            running[key] = use
            return
        }
        running[key] = nil
        let now = service.clock.wallNow
        book.record(.use(use.entry(stopped: now)), user: key.user, now: now)
        if running.isEmpty { writeNow() } else { write(after: Self.writeDelay) }
    }

    /// Records `lookup`, made by a provider that runs for clients served at `level` or finer, for each user whose
    /// running uses needed it, naming that user's apps; a lookup no client needed (for the regions alone) is
    /// recorded for the users whose apps watch regions, each named `verified:ID` or `claimed:ID`.
    func record(_ lookup: NetworkLookup, neededLevel level: AccuracyLevel) {
        var apps: [UInt32: Set<String>] = [:]
        for (key, demanded) in clientUses.values where demanded >= level { apps[key.user, default: []].insert(key.app) }
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
        let going = running.filter { $0.key.user == user }.values.sorted { $0.use.started < $1.use.started }
        return book.entries(ofUser: user, since: since, now: now) + going.map { .use($0.entry(stopped: nil)) }
    }

    /// The users who have entries or uses going on, sorted.
    var users: [UInt32] { Set(book.keepingUsers + running.keys.map(\.user)).sorted() }

    /// Forgets the history of `user` (`ClearHistory`); its uses going on count from now.
    func clear(user: UInt32) {
        book.clear(user: user)
        let now = service.clock.wallNow
        for key in running.keys where key.user == user {
            running[key]?.use.started = now
            running[key]?.providers = []
        }
        writeNow()
    }

    /// Records every use going on as ended now and hands everything to the store, for a process about to end.
    func saveNow() {
        for id in clientUses.keys.sorted() { clientEnded(id) }
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
}
