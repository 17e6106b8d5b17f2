import DBus
import Loop
import WhereaboutsCore

/// The clients: made, deleted, dropped with their connection, and counted; and the calls held for them.
extension GeoClueService {
    func client(_ id: UInt32) -> ClientObject? { clients[id] }

    /// Hands the regions' states not yet written to their file, for a process about to end.
    public func saveRegionsNow() { regions.saveNow() }

    /// Records the uses going on as ended and hands the histories not yet written to their files, for a process
    /// about to end.
    public func saveHistoryNow() { history.saveNow() }

    /// The clients of `app` run by `uid`: those a change of its authorisation concerns, whose connections also hear
    /// of the app's regions.
    func clients(of app: String, uid: UInt32) -> [ClientObject] {
        clients.all.filter { $0.app?.id == app && peers.knownUser(of: $0.owner) == uid }
    }

    /// `GetClient` (reuse) and `CreateClient`: a client owned by `sender`, run by the Unix user `uid`; never
    /// waits for an agent.
    func client(for sender: String, uid: UInt32, reuse: Bool) throws(DBusError) -> ClientObject {
        if reuse, let existing = clients.first(ownedBy: sender) { return existing }
        let added = clients.add(owner: sender, uid: uid) { ClientObject(id: $0, owner: sender, service: self) }
        switch added {
        case .success(let client):
            onClientCountChanged?(clients.count)
            return client
        case .failure(.connection(let held)):
            throw .limitsExceeded("\(sender) already has \(held) clients, the most one connection may have")
        case .failure(.user(let uid, let held)):
            throw .limitsExceeded("UID \(uid) already has \(held) clients, the most one user may have")
        case .failure(.total(let held)):
            throw .limitsExceeded("the service already has \(held) clients")
        }
    }

    /// `DeleteClient`: deletes the client at `path` if `sender` owns it; anything else is a silent no-op,
    /// as in GeoClue.
    func deleteClient(at path: ObjectPath, requestedBy sender: String) {
        guard path.parent == GeoClue.clientRoot, let id = UInt32(path.lastElement), let client = clients[id],
            client.owner == sender, clients.remove(id) != nil
        else { return }
        forget(client)
        onClientCountChanged?(clients.count)
    }

    /// Tears `client`, no longer in ``clients``, down, at a cost independent of how many clients there are.
    private func forget(_ client: ClientObject) {
        client.tearDown()
        activity.set(nil, of: client.id)
        history.clientEnded(client.id)
    }

    /// Drops everything of a connection that left: its clients (in time linear in how many it owned), its agent,
    /// its simulation, and what it read.
    func peerVanished(_ name: String) {
        defer { peers.vanished(name) }
        connection.forgetCalls(from: name)
        sessions.forget(name)
        agentVanished(name)
        activity.forget(name)
        if simulation?.owner == name { endSimulation(reason: "stopped") }
        let owned = clients.removeAll(ownedBy: name)
        guard !owned.isEmpty else {
            // Only a peer that called the service: a desktop's other connections come and go all the time.
            if peers.knownUser(of: name) != nil { onClientlessPeerLeft?() }
            return
        }
        logger.info("client \(name) vanished, dropping \(owned.count) client object(s)")
        activity.inOneUpdate {
            for client in owned { forget(client) }
        }
        onClientCountChanged?(clients.count)
    }

    /// Called by a client when it starts or stops.
    ///
    /// A client that starts while the providers already run gets the latest fix at once, not at the next report.
    func clientActivityChanged(_ client: ClientObject) {
        let providersWereRunning = activity.demand != nil
        recount(client)
        if providersWereRunning, client.active, !client.hasFixSinceStart, let lastFix { client.offer(lastFix) }
        if providersWereRunning, !client.active, client.isServing { onFreshFixWanted?() }
    }

    /// Re-checks the clients of `app` run by `uid` after its authorisation changed; those no longer authorised stop.
    func recheck(uid: UInt32, app: String) async {
        for client in clients(of: app, uid: uid) { await client.recheckAuthorisation(uid: uid) }
    }

    /// Applies a new agent cap (or its end) to every client of `uid`.
    func agentCapChanged(uid: UInt32) {
        activity.inOneUpdate {
            for client in clients.all where peers.knownUser(of: client.owner) == uid { client.capChanged() }
        }
    }

    /// Holds or resumes the clients whose process is in the login session at `path`.
    func sessionChanged(_ path: ObjectPath, active: Bool) {
        polkit?.sessionChanged(id: path.rawValue)
        activity.inOneUpdate {
            for client in clients.all where sessions.sessionPath(of: client.owner) == path {
                client.sessionChanged(active: active)
            }
        }
    }

    /// Counts again what `client` adds to the activity (its level, app, user and whether it is started), after
    /// any of them changed.
    func recount(_ client: ClientObject) {
        let app = client.app?.id ?? client.desktopId ?? ""
        let contribution: ActivityContribution? =
            client.isServing
            ? ActivityContribution(
                level: client.demandedLevel, user: peers.knownUser(of: client.owner),
                app: configuration.isSystemApp(app) ? nil : app, started: client.active,
                timeThreshold: client.life.thresholds.time)
            : nil
        // First: setting the activity may start a provider whose fix reaches the client at once, ending a single
        // request's use before this returns.
        history.clientChanged(client, user: peers.knownUser(of: client.owner))
        activity.set(contribution, of: client.id)
    }

    // MARK: Held calls

    /// Counts `call`, which the service may answer later, against the caller's share of ``heldCallLimits`` until it
    /// is answered; past a limit it fails with `LimitsExceeded`.
    func hold(_ call: MethodCall) throws(DBusError) {
        let sender = call.sender
        if let refusal = heldCalls.hold(sender, user: peers.knownUser(of: sender)) {
            let limits = GeoClueService.heldCallLimits
            switch refusal {
            case .connection(let held) where held < limits.perConnection:
                let limit = heldCalls.untilIdentified.perConnection
                throw .limitsExceeded(
                    "\(sender) already has \(held) calls waiting before its user is known; while connections not known yet hold \(heldCalls.unidentified), each may have \(limit)"
                )
            case .connection(let held):
                throw .limitsExceeded(
                    "\(sender) already has \(held) calls waiting, the most one connection may have (\(limits.perConnection))"
                )
            case .user(let uid, let held):
                throw .limitsExceeded(
                    "UID \(uid) already has \(held) calls waiting, the most one user may have (\(limits.perUser))")
            case .total(let held):
                throw .limitsExceeded("the service already holds \(held) calls waiting")
            }
        }
        call.onAnswered = { [weak self] in self?.heldCalls.release(sender) }
    }
}
