import DBus
import Loop
import WhereaboutsCore

/// One application's client: `org.freedesktop.GeoClue2.Client` and `io.github.whereabouts1.Client` at
/// `/org/freedesktop/GeoClue2/Client/N`.
///
/// It answers only the connection that created it. Its property changes and signals go to that connection alone
/// (GeoClue broadcasts the property changes, which leaks coordinates to every peer). `PropertiesChanged` of
/// Whereabouts' own interfaces (`io.github.whereabouts1.Client`, and `io.github.whereabouts1.Location` of its
/// Location objects) is sent only once the owner has used them: called one of their methods, or read or written one
/// of their properties. A GeoClue client, which knows only GeoClue's interfaces, holds no value of theirs to keep
/// current, and is spared a message for every change of them; it gets every `PropertiesChanged` of GeoClue's
/// interfaces as before. Signals (`AvailabilityChanged`, `UpdatesTimedOut`) are sent as ever.
@BusActor
final class ClientObject: ExportedObject {
    /// The longest `DesktopId` accepted, in bytes: a desktop file name cannot be longer.
    static let maximumDesktopIdLength = 255
    /// The level a client that does not ask for high accuracy is served at, at most: no satellite receiver.
    static let powerSavingLevel = AccuracyLevel.street
    /// `RequestLocation`'s time limit when the options give none.
    static let defaultRequestTimeout: Duration = .seconds(30)

    let id: UInt32
    let path: ObjectPath
    let owner: String
    private unowned let service: GeoClueService

    private(set) var desktopId: String?
    private(set) var thresholds = Thresholds()
    private(set) var requestedLevel: UInt32 = AccuracyLevel.city.rawValue
    /// GeoClue's `Active`: started with `Start` and not stopped.
    private(set) var active = false
    private(set) var servedLevel: AccuracyLevel = .none
    /// True once a fix has been served since the last `Start`.
    private(set) var hasFixSinceStart = false
    private var highAccuracy = true
    private var minimumUpdateDistance = 0.0
    private var monitoringTimeout: UInt32 = 0
    private var monitoringTimer: TimerID?
    private var available: Bool
    private var starting = false
    /// How many times `Stop` was called; a `Start` whose checks outlast a `Stop` does not start the client.
    private var startsCancelled = 0
    /// True when a hold stopped this started client, which starts again by itself when every hold ends.
    private var resumesLater = false
    /// What holds the client now.
    private var holds: Set<Hold> = []
    /// The level the user's agent allowed this app with `AuthorizeApp` for the current start, if it was asked.
    private var agentAllowance: AccuracyLevel?
    /// The owner's Unix user, once known.
    private var uid: UInt32?
    private var streamed = ObjectSet(.location)
    private var answers = ObjectSet(.request)
    private var lastSignalled: Fix?
    /// The level `lastSignalled` was served at.
    private var signalledLevel = AccuracyLevel.none
    private var lastKnown: LocationObject?
    private var pendingRequests: [PendingRequest] = []
    private var authorisation = Authorisation(status: .notDetermined, approximate: false)
    /// True once the owner has used Whereabouts' own interfaces; until then their `PropertiesChanged` is not sent.
    private var usesWhereaboutsInterfaces = false

    /// A `RequestLocation` waiting for a fix.
    private struct PendingRequest {
        let call: MethodCall
        let timer: TimerID
    }

    init(id: UInt32, owner: String, service: GeoClueService) {
        self.id = id
        self.owner = owner
        self.service = service
        path = GeoClue.clientRoot.appending(String(id))
        available = service.availableLevel != .none
        streamed.whenDue = expiry(of: .location)
        answers.whenDue = expiry(of: .request)
    }

    var interfaces: [InterfaceDescription] { [GeoClue.client, Whereabouts.client] }

    /// True while the client needs fixes: started, or waiting for a single one.
    var isServing: Bool { active || !pendingRequests.isEmpty }

    /// The level the providers must serve for this client: the served level, without satellites when the client
    /// saves power.
    var demandedLevel: AccuracyLevel { highAccuracy ? servedLevel : min(servedLevel, ClientObject.powerSavingLevel) }

    /// The `Location` property: `/` until the first fix is signalled.
    var locationPath: ObjectPath { streamed.currentPath ?? .root }

    func checkAccess(sender: String) -> DBusError? {
        sender == owner ? nil : .accessDenied("Access denied")
    }

    /// A property's value for `Get` and `GetAll`, which only the owner may call: a read of ours marks the owner
    /// as using Whereabouts' interfaces.
    func property(_ name: String, interface: String) -> DBusValue {
        if interface == Whereabouts.clientInterface { usesWhereaboutsInterfaces = true }
        return switch name {
        case "Location": .objectPath(locationPath)
        case "DistanceThreshold": .uint32(thresholds.distance)
        case "TimeThreshold": .uint32(thresholds.time)
        case "DesktopId": .string(desktopId ?? "")
        case "RequestedAccuracyLevel": .uint32(requestedLevel)
        case "AuthorisationStatus": .string(authorisation.status.rawValue)
        case "Approximate": .boolean(authorisation.approximate)
        case "Available": .boolean(available)
        case "LastLocation": .objectPath(lastKnownPath())
        case "HighAccuracy": .boolean(highAccuracy)
        case "MinimumUpdateDistance": .double(minimumUpdateDistance)
        case "MonitoringTimeout": .uint32(monitoringTimeout)
        default: .boolean(active)
        }
    }

    /// `Set` on the writable properties of both client interfaces.
    ///
    /// GeoClue's thresholds take effect at once; the requested level is read at the next `Start`, as in GeoClue.
    func setProperty(_ name: String, interface: String, value: DBusValue, sender: String) throws(DBusError) {
        if interface == Whereabouts.clientInterface { usesWhereaboutsInterfaces = true }
        switch name {
        case "DistanceThreshold": thresholds.distance = value.uint32!
        case "TimeThreshold": thresholds.time = value.uint32!
        case "RequestedAccuracyLevel": requestedLevel = value.uint32!
        case "DesktopId":
            let text = value.string!
            guard text.utf8.count <= ClientObject.maximumDesktopIdLength else {
                throw .invalidArgs(
                    "DesktopId is \(text.utf8.count) bytes long; at most \(ClientObject.maximumDesktopIdLength) are allowed"
                )
            }
            desktopId = text
            if isServing { service.recount(self) }
        case "HighAccuracy":
            highAccuracy = value.bool!
            if isServing { service.clientActivityChanged(self) }
        case "MinimumUpdateDistance":
            let metres = value.double!
            guard metres.isFinite, metres >= 0 else {
                throw .invalidArgs("MinimumUpdateDistance must be a finite number of metres ≥ 0")
            }
            minimumUpdateDistance = metres
        case "MonitoringTimeout":
            monitoringTimeout = value.uint32!
            armMonitoring()
        default: throw .invalidArgs("Property \"\(name)\" is not writable")
        }
        emitChanged([name: property(name, interface: interface)], interface: interface)
    }

    /// `RequestLocation`, `RequestAuthorisation` and `CheckAuthorisation` answer later, so each call counts against
    /// the caller's share of ``GeoClueService/heldCallLimits`` until it is answered; `Start` does not (a client has
    /// at most one in progress), nor `Stop`.
    func handle(_ call: MethodCall, interface: String, method: String) throws(DBusError) -> Reply {
        if interface == Whereabouts.clientInterface { usesWhereaboutsInterfaces = true }
        if method != "Start" && method != "Stop" { try service.hold(call) }
        switch method {
        case "Start": return try start(call)
        case "RequestLocation": return try requestLocation(call)
        case "RequestAuthorisation": return try requestAuthorisation(call)
        case "CheckAuthorisation": return try checkAuthorisation(call)
        default:
            resumesLater = false
            agentAllowance = nil
            startsCancelled += 1
            stop()
            return .values([])
        }
    }

    // MARK: Start and Stop

    /// Checks the caller's app against the configuration, polkit or the stored decisions, the user's agent and the
    /// login session, and returns the level to serve it at; never waits for an agent to register. A refusal is
    /// `AccessDenied`, as GeoClue's; polkit, logind or the agent failing or silent denies with its reason.
    private func authorise(_ desktopId: String) async throws(DBusError) -> AccuracyLevel {
        try requireServices()
        let holdsBefore = holds
        let uid = try await service.uid(of: owner)
        self.uid = uid
        guard service.client(id) === self else { throw .failed("the client was deleted") }
        if case .disallowed = service.configuration.permission(for: desktopId, uid: uid) {
            service.logger.notice("'\(desktopId)' disallowed by configuration")
            update(Authorisation(status: .restricted, approximate: false))
            throw .accessDenied("'\(desktopId)' disallowed by configuration for UID \(uid)")
        }
        try await refreshAuthorisation(desktopId, uid: uid)
        let cap = await service.accuracyCap(uid: uid)
        if cap == AccuracyLevel.none { throw .accessDenied(explain(.disabledByAgent, desktopId, uid: uid)) }
        if authorisation.status == .notDetermined, agentAllowance == nil, service.hasAgent(uid: uid) {
            try await askAgent(desktopId, uid: uid)
        }
        let session: LoginSession =
            AuthorisationRule.followsSession(authorisation.status, agentAllowance: agentAllowance)
            ? try await service.loginSession(of: owner) : .unknown
        let admission = AuthorisationRule.admission(
            status: authorisation.status, approximate: authorisation.approximate, agentAllowance: agentAllowance,
            requested: AccuracyLevel(clampingRequested: requestedLevel), session: session, cap: cap)
        switch admission {
        case .success(let admitted):
            try requireServices()
            guard service.client(id) === self else { throw .failed("the client was deleted") }
            // The cap as it is now: the agent may have lowered it while the checks were waiting.
            let level = service.knownCap(uid: uid).map { min(admitted, $0) } ?? admitted
            if level == AccuracyLevel.none { throw .accessDenied(explain(.disabledByAgent, desktopId, uid: uid)) }
            // A session or cap change that arrived during the checks wins; those the checks passed are over.
            if holds.contains(.sessionInactive) && !holdsBefore.contains(.sessionInactive) {
                throw .accessDenied(explain(.sessionInactive, desktopId, uid: uid))
            }
            if holds.contains(.agentDisabled) && !holdsBefore.contains(.agentDisabled) {
                throw .accessDenied(explain(.disabledByAgent, desktopId, uid: uid))
            }
            holds.subtract([.sessionInactive, .agentDisabled])
            return level
        case .failure(let refusal):
            throw .accessDenied(explain(refusal, desktopId, uid: uid))
        }
    }

    /// Asks the user's agent, as GeoClue does at `Start`, whether `desktopId` may have location; the answer
    /// holds for this start only (the agent keeps its own memory).
    private func askAgent(_ desktopId: String, uid: UInt32) async throws(DBusError) {
        let requested = AccuracyLevel(clampingRequested: requestedLevel)
        switch await service.authorizeApp(uid: uid, app: desktopId, level: requested) {
        case .success(let allowed?):
            agentAllowance = allowed
        case .success(nil):
            throw .accessDenied(
                "Agent rejected '\(desktopId)' for user '\(uid)'. Please ensure that '\(desktopId)' has installed a valid \(desktopId).desktop file."
            )
        case .failure(let failure):
            throw .accessDenied("cannot ask the agent: \(failure.message)")
        }
    }

    /// The message a refusal fails with (GeoClue's wording where GeoClue has one).
    private func explain(_ refusal: Refusal, _ desktopId: String, uid: UInt32) -> String {
        switch refusal {
        case .notAuthorised(let status): "'\(desktopId)' is not authorised for location (\(status.rawValue))"
        case .sessionInactive: "'\(desktopId)' is authorised when in use, and its login session is not active"
        case .outsideSession: "'\(desktopId)' is authorised when in use, and its process is in no login session"
        case .disabledByAgent: "Geolocation disabled for UID \(uid)"
        }
    }

    /// Fails with `io.github.whereabouts1.Error.ServicesDisabled` while location services are switched off.
    private func requireServices() throws(DBusError) {
        guard service.servicesEnabled else {
            throw DBusError(name: Whereabouts.Error.servicesDisabled, message: "location services are switched off")
        }
    }

    /// Recomputes `AuthorisationStatus`, telling the owner when it changed. A refusal is `AccessDenied`, or
    /// `LimitsExceeded` when the user already has too many polkit checks waiting.
    private func refreshAuthorisation(_ desktopId: String, uid: UInt32) async throws(DBusError) {
        let level = AccuracyLevel(clampingRequested: requestedLevel)
        switch await service.authorisation(busName: owner, uid: uid, app: desktopId, level: level) {
        case .success(let result): update(result)
        case .failure(let failure) where failure.limitsExceeded:
            throw .limitsExceeded("cannot check authorisation: \(failure.message)")
        case .failure(let failure): throw .accessDenied("cannot check authorisation: \(failure.message)")
        }
    }

    private func update(_ value: Authorisation) {
        guard value != authorisation else { return }
        authorisation = value
        emitChanged(
            ["AuthorisationStatus": .string(value.status.rawValue), "Approximate": .boolean(value.approximate)],
            interface: Whereabouts.clientInterface)
    }

    /// The finest level the client may get, its login session aside: the requested level, no finer than city for
    /// an approximate grant, than the agent's allowance for this start, or than the user's agent cap.
    private var permittedLevel: AccuracyLevel {
        AuthorisationRule.permittedLevel(
            requested: AccuracyLevel(clampingRequested: requestedLevel), approximate: authorisation.approximate,
            agentAllowance: agentAllowance, cap: uid.flatMap { service.knownCap(uid: $0) })
    }

    /// `CheckAuthorisation() → s status`: recomputes `AuthorisationStatus` without asking anyone.
    private func checkAuthorisation(_ call: MethodCall) throws(DBusError) -> Reply {
        guard let desktopId else { throw .accessDenied("'DesktopId' property must be set") }
        BusActor.task { [self] in
            do throws(DBusError) {
                let uid = try await service.uid(of: owner)
                if case .disallowed = service.configuration.permission(for: desktopId, uid: uid) {
                    update(Authorisation(status: .restricted, approximate: false))
                } else {
                    try await refreshAuthorisation(desktopId, uid: uid)
                }
                call.reply([.string(authorisation.status.rawValue)])
            } catch {
                call.fail(error)
            }
        }
        return .later
    }

    /// `RequestAuthorisation(s grant, a{sv} options) → s status`: asks the user through polkit, with user
    /// interaction allowed, for `when-in-use` or `always`; option `approximate` (b) asks for approximate location
    /// only. The outcome is stored as the user's decision; an app that already has what it asks for, or that
    /// policy restricts, is not asked.
    private func requestAuthorisation(_ call: MethodCall) throws(DBusError) -> Reply {
        guard let grantName = call.arguments[0].string, let kind = GrantKind(rawValue: grantName) else {
            throw .invalidArgs("grant must be \"when-in-use\" or \"always\"")
        }
        var approximate = false
        for (key, value) in call.arguments[1].stringKeyedEntries ?? [:] {
            guard key == "approximate", let flag = value.bool else {
                throw .invalidArgs("unknown or mistyped option '\(key)'; known: approximate b")
            }
            approximate = flag
        }
        guard let desktopId else { throw .accessDenied("'DesktopId' property must be set") }
        BusActor.task { [self] in
            do throws(DBusError) {
                let uid = try await service.uid(of: owner)
                try await refreshAuthorisation(desktopId, uid: uid)
                let held = authorisation.status
                let satisfied = held == .authorisedAlways || (held == .authorisedWhenInUse && kind == .whenInUse)
                if !satisfied && held != .restricted {
                    if let limit = service.grants.refusal(
                        of: .granted(.whenInUse, approximate: true), uid: uid, app: desktopId)
                    {
                        throw .limitsExceeded("cannot store a decision about '\(desktopId)': \(limit)")
                    }
                    let result = await service.requestGrant(
                        kind, approximate: approximate, busName: owner, uid: uid, app: desktopId, level: permittedLevel)
                    if case .failure(let failure) = result { throw .failed("cannot ask: \(failure.message)") }
                    try await refreshAuthorisation(desktopId, uid: uid)
                }
                call.reply([.string(authorisation.status.rawValue)])
            } catch {
                call.fail(error)
            }
        }
        return .later
    }

    /// `Start`: checks the app, then serves fixes at the requested level. A `Stop` that arrives while the checks
    /// run wins: `Start` then answers without starting.
    private func start(_ call: MethodCall) throws(DBusError) -> Reply {
        if active { return .values([]) }
        guard let desktopId else { throw .accessDenied("'DesktopId' property must be set") }
        guard !starting else { throw .failed("Start is already in progress") }
        starting = true
        let cancellations = startsCancelled
        BusActor.task { [self] in
            defer { self.starting = false }
            do throws(DBusError) {
                let level = try await authorise(desktopId)
                guard startsCancelled == cancellations else {
                    call.reply()
                    return
                }
                activate(at: level)
                call.reply()
                serve()
            } catch {
                call.fail(error)
            }
        }
        return .later
    }

    /// Makes the client active at `level`, telling the owner.
    private func activate(at level: AccuracyLevel) {
        active = true
        resumesLater = false
        hasFixSinceStart = false
        servedLevel = level
        emitChanged(["Active": .boolean(true)], interface: GeoClue.clientInterface)
    }

    /// Begins serving an active client: its monitoring timer, and the providers its level needs.
    private func serve() {
        armMonitoring()
        service.clientActivityChanged(self)
    }

    // MARK: Holds

    /// Why the service holds a client: it keeps the client but serves it nothing until every hold ends.
    enum Hold: Hashable {
        /// Location services are switched off.
        case servicesDisabled
        /// The app is authorised *when in use*, and its login session is not active.
        case sessionInactive
        /// The user's agent allows no location (`MaxAccuracyLevel` 0).
        case agentDisabled
    }

    /// Holds the client for a reason outside it: waiting requests fail with `error`, a started client becomes
    /// inactive and starts again by itself once every hold has ended (``resume(_:reason:)``), and the owner hears
    /// `AvailabilityChanged(false, reason)`.
    func suspend(_ hold: Hold, reason: String, failing error: DBusError) {
        holds.insert(hold)
        if active { resumesLater = true }
        halt(failing: error)
        setAvailable(false, reason: reason)
    }

    /// Ends a hold. Once none is left, the owner hears whether location is available again, and a client the
    /// holds stopped starts again if its app is still authorised.
    func resume(_ hold: Hold, reason: String) {
        holds.remove(hold)
        guard holds.isEmpty else { return }
        setAvailable(service.availableLevel != .none, reason: reason)
        guard resumesLater, !active, !starting, let desktopId else { return }
        starting = true
        BusActor.task { [self] in
            defer { self.starting = false }
            do throws(DBusError) {
                let level = try await authorise(desktopId)
                // A hold may have come back, or the owner stopped the client, meanwhile.
                guard holds.isEmpty, resumesLater else { return }
                activate(at: level)
                serve()
            } catch {
                if holds.isEmpty { resumesLater = false }
                service.logger.info("\(path) ('\(desktopId)') stays stopped: \(error.message)")
            }
        }
    }

    /// The process's login session became active or inactive: a client served only *when in use* is held while
    /// it is inactive (`AvailabilityChanged(false, "session-inactive")`) and resumes when it is active again
    /// (`"session-active"`).
    func sessionChanged(active sessionActive: Bool) {
        guard let desktopId, AuthorisationRule.followsSession(authorisation.status, agentAllowance: agentAllowance)
        else { return }
        if sessionActive {
            resume(.sessionInactive, reason: "session-active")
        } else {
            suspend(
                .sessionInactive, reason: "session-inactive",
                failing: DBusError(
                    name: Whereabouts.Error.permissionDenied,
                    message: explain(.sessionInactive, desktopId, uid: uid ?? 0)))
        }
    }

    /// The user's agent cap changed (or its agent left): a running client is served at the new level at once
    /// (the latest fix is sent again at that level, the providers follow); a cap of 0 holds the client
    /// (`AvailabilityChanged(false, "agent-disabled")`) until the cap rises (`"agent-enabled"`).
    func capChanged() {
        let level = permittedLevel
        if level == .none {
            suspend(
                .agentDisabled, reason: "agent-disabled",
                failing: DBusError(
                    name: Whereabouts.Error.permissionDenied,
                    message: explain(.disabledByAgent, desktopId ?? "", uid: uid ?? 0)))
            return
        }
        if holds.contains(.agentDisabled) {
            resume(.agentDisabled, reason: "agent-enabled")
            return
        }
        guard isServing, level != servedLevel else { return }
        service.logger.info("\(path) ('\(desktopId ?? "")') is now served at level \(level.rawValue)")
        servedLevel = level
        service.clientActivityChanged(self)
        if let fix = service.lastFix { stream(fix) }
    }

    /// Fails the waiting requests with `error` and stops the client.
    private func halt(failing error: DBusError) {
        for request in pendingRequests {
            EventLoop.main.cancel(request.timer)
            request.call.fail(error)
        }
        let wasServing = isServing
        pendingRequests.removeAll()
        stop()
        if wasServing { service.clientActivityChanged(self) }
    }

    /// Recomputes the authorisation after it changed elsewhere; a client no longer authorised stops at once,
    /// fails its waiting requests and hears `AvailabilityChanged(false, "authorisation-changed")`. A client now
    /// authorised only *when in use* is held if its login session is not active.
    func recheckAuthorisation(uid: UInt32) async {
        guard let desktopId else { return }
        do {
            try await refreshAuthorisation(desktopId, uid: uid)
        } catch {
            update(Authorisation(status: .notDetermined, approximate: false))
        }
        if AuthorisationRule.followsSession(authorisation.status, agentAllowance: agentAllowance) {
            guard isServing || resumesLater else { return }
            let session = (try? await service.loginSession(of: owner)) ?? .outside
            if session == .inactive || session == .outside { sessionChanged(active: false) }
            return
        }
        guard !authorisation.status.isAuthorised else {
            // Now authorised beyond its session (always): a session hold no longer applies.
            if holds.contains(.sessionInactive) { resume(.sessionInactive, reason: "authorisation-changed") }
            return
        }
        resumesLater = false
        agentAllowance = nil
        halt(failing: DBusError(name: Whereabouts.Error.permissionDenied, message: "the authorisation was revoked"))
        service.connection.emitSignal(
            path: path, interface: Whereabouts.clientInterface, member: "AvailabilityChanged",
            arguments: [.boolean(false), .string("authorisation-changed")], destination: owner)
    }

    /// `Stop`: no more fixes; the `Location` property keeps its last value.
    func stop() {
        guard active else { return }
        active = false
        armMonitoring()
        emitChanged(["Active": .boolean(false)], interface: GeoClue.clientInterface)
        service.clientActivityChanged(self)
    }

    // MARK: Single requests

    /// `RequestLocation(a{sv} options) → o`: one fix, as a Location object under `…/Request/`.
    ///
    /// Options: `timeout` (u, milliseconds; default 30 000), `maximum-age` (u, milliseconds: a fix that recent is
    /// answered at once without starting any provider), `high-accuracy` (b). No fix in time fails with
    /// `io.github.whereabouts1.Error.Timeout`; the providers going away while it waits with
    /// `…Error.LocationUnavailable`; a refused app with `…Error.PermissionDenied`.
    private func requestLocation(_ call: MethodCall) throws(DBusError) -> Reply {
        let options = call.arguments[0].stringKeyedEntries ?? [:]
        var timeout = ClientObject.defaultRequestTimeout
        var maximumAge: Duration?
        var wantsHighAccuracy: Bool?
        for (key, value) in options {
            switch (key, value) {
            case ("timeout", .uint32(let milliseconds)): timeout = .milliseconds(Int(max(1, milliseconds)))
            case ("maximum-age", .uint32(let milliseconds)): maximumAge = .milliseconds(Int(milliseconds))
            case ("high-accuracy", .boolean(let wanted)): wantsHighAccuracy = wanted
            default:
                throw .invalidArgs(
                    "unknown or mistyped option '\(key)' (\(value.signature)); known: timeout u, maximum-age u, high-accuracy b"
                )
            }
        }
        guard let desktopId else { throw .accessDenied("'DesktopId' property must be set") }
        if let wantsHighAccuracy {
            highAccuracy = wantsHighAccuracy
            if isServing { service.recount(self) }
        }
        BusActor.task { [self] in
            let level: AccuracyLevel
            do throws(DBusError) {
                level = try await authorise(desktopId)
            } catch {
                let denied = error.name == DBusError.Name.accessDenied
                call.fail(denied ? DBusError(name: Whereabouts.Error.permissionDenied, message: error.message) : error)
                return
            }
            if let maximumAge, let cached = service.lastFix,
                service.clock.wallNow.since(cached.timestamp) <= maximumAge
            {
                call.reply([.objectPath(answer(with: cached, at: level))])
                return
            }
            let timer = EventLoop.main.schedule(after: timeout) { [weak self] in self?.requestTimedOut(call) }
            if !active { servedLevel = level }
            let wasServing = isServing
            pendingRequests.append(PendingRequest(call: call, timer: timer))
            if wasServing { service.recount(self) } else { service.clientActivityChanged(self) }
        }
        return .later
    }

    /// Fails the waiting `RequestLocation` calls with `error`, leaving a started client as it is.
    func failWaitingRequests(_ error: DBusError) {
        guard !pendingRequests.isEmpty else { return }
        for request in pendingRequests {
            EventLoop.main.cancel(request.timer)
            request.call.fail(error)
        }
        pendingRequests.removeAll()
        if !active { service.clientActivityChanged(self) }
    }

    private func requestTimedOut(_ call: MethodCall) {
        pendingRequests.removeAll { $0.call === call }
        call.fail(DBusError(name: Whereabouts.Error.timeout, message: "no location within the timeout"))
        if !isServing { service.clientActivityChanged(self) }
    }

    /// Publishes `fix`, served at `level`, as the answer to a request and returns its path.
    private func answer(with fix: Fix, at level: AccuracyLevel) -> ObjectPath {
        let object = answers.add(
            coarsen(fix, to: level), owner: owner, in: service, under: path, onExtendedRead: extendedRead)
        return object.path
    }

    // MARK: Fixes

    /// Serves `fix`: answers waiting requests, then, when started, signals it by the threshold rules.
    func offer(_ fix: Fix) {
        if !pendingRequests.isEmpty {
            let waiting = pendingRequests
            pendingRequests.removeAll()
            let answerPath = answer(with: fix, at: servedLevel)
            for request in waiting {
                EventLoop.main.cancel(request.timer)
                request.call.reply([.objectPath(answerPath)])
            }
            if !active { service.clientActivityChanged(self) }
        }
        stream(fix)
    }

    /// Signals `fix` to a started client at its served level, by the threshold rules; another report of the
    /// measurement signalled since `Start` at the same level (same provider, same fix time) refreshes its Location
    /// in place.
    private func stream(_ fix: Fix) {
        guard active else { return }
        let served = coarsen(fix, to: servedLevel)
        if hasFixSinceStart, servedLevel == signalledLevel, let current = streamed.current,
            current.fix.provider == served.provider, current.fix.timestamp == served.timestamp
        {
            // Another report of the measurement already signalled (gpsd answers ?POLL mid-epoch with part of the
            // epoch, and the full report follows): refreshed in place, never signalled twice.
            if current.fix != served { refresh(current, with: served) }
            return
        }
        hasFixSinceStart = true
        if minimumUpdateDistance > 0, let lastSignalled, served.distance(to: lastSignalled) < minimumUpdateDistance {
            return
        }
        armMonitoring()
        if let current = streamed.current, thresholds.decide(served, lastSignalled: lastSignalled) == .updateInPlace {
            refresh(current, with: served)
            return
        }
        let oldPath = streamed.currentPath ?? .root
        let object = streamed.add(
            served, owner: owner, in: service, under: path, onExtendedRead: extendedRead)
        lastSignalled = served
        signalledLevel = servedLevel
        emitChanged(["Location": .objectPath(object.path)], interface: GeoClue.clientInterface)
        service.connection.emitSignal(
            path: path, interface: GeoClue.clientInterface, member: "LocationUpdated",
            arguments: [.objectPath(oldPath), .objectPath(object.path)], destination: owner)
    }

    /// Puts `fix` into the current Location object, with `PropertiesChanged` and no `LocationUpdated`: on GeoClue's
    /// Location interface, and on ours once the owner uses Whereabouts' interfaces.
    private func refresh(_ current: LocationObject, with fix: Fix) {
        current.fix = fix
        for interface in current.interfaces
        where interface.name != Whereabouts.locationInterface || usesWhereaboutsInterfaces {
            service.connection.emitPropertiesChanged(
                path: current.path, interface: interface.name, changed: current.allProperties(of: interface),
                destination: owner)
        }
    }

    /// Updates `Available` (false while the client is held) and tells the owner why it changed.
    func setAvailable(_ value: Bool, reason: String) {
        let value = value && holds.isEmpty
        guard value != available else { return }
        available = value
        emitChanged(["Available": .boolean(value)], interface: Whereabouts.clientInterface)
        service.connection.emitSignal(
            path: path, interface: Whereabouts.clientInterface, member: "AvailabilityChanged",
            arguments: [.boolean(value), .string(reason)], destination: owner)
    }

    /// `LastLocation`: the latest fix any provider produced, even an old one, as an object marked stale at
    /// `…/LastLocation`; made when read, so clients that never ask cost nothing; `/` before any fix.
    private func lastKnownPath() -> ObjectPath {
        let level = permittedLevel
        guard service.servicesEnabled, holds.isEmpty, level != .none, let fix = service.lastFix else { return .root }
        let served = coarsen(fix, to: level)
        if let lastKnown, lastKnown.fix == served { return lastKnown.path }
        let object = LocationObject(
            path: path.appending("LastLocation"), owner: owner, fix: served, stale: true, onExtendedRead: extendedRead)
        lastKnown = object
        service.connection.export(object, at: object.path, visibleTo: owner)
        return object.path
    }

    /// Restarts the monitoring timer: `UpdatesTimedOut` when no update came within `MonitoringTimeout`.
    private func armMonitoring() {
        if let monitoringTimer { EventLoop.main.cancel(monitoringTimer) }
        monitoringTimer = nil
        guard active, monitoringTimeout > 0 else { return }
        monitoringTimer = EventLoop.main.schedule(after: .milliseconds(Int(monitoringTimeout))) { [weak self] in
            guard let self else { return }
            self.monitoringTimer = nil
            self.service.connection.emitSignal(
                path: self.path, interface: Whereabouts.clientInterface, member: "UpdatesTimedOut", arguments: [],
                destination: self.owner)
            self.armMonitoring()
        }
    }

    /// Unexports the client and its Location objects, failing waiting requests.
    func tearDown() {
        for request in pendingRequests {
            EventLoop.main.cancel(request.timer)
            request.call.fail(.failed("the client was deleted"))
        }
        pendingRequests.removeAll()
        if let monitoringTimer { EventLoop.main.cancel(monitoringTimer) }
        active = false
        streamed.removeAll(from: service)
        answers.removeAll(from: service)
        if let lastKnown { service.connection.unexport(lastKnown.path) }
        service.connection.unexport(path)
    }

    /// Tells the owner that `values` of `interface` changed; a change of ours only once it uses Whereabouts'
    /// interfaces.
    private func emitChanged(_ values: [String: DBusValue], interface: String) {
        guard interface != Whereabouts.clientInterface || usesWhereaboutsInterfaces else { return }
        service.connection.emitPropertiesChanged(path: path, interface: interface, changed: values, destination: owner)
    }

    /// Called when the owner reads `io.github.whereabouts1.Location` of one of the client's Location objects.
    private var extendedRead: @BusActor () -> Void {
        { [weak self] in self?.usesWhereaboutsInterfaces = true }
    }
}

extension ClientObject {
    /// What an object set's grace timer calls: releases the set's objects whose grace period ended.
    fileprivate func expiry(of kind: ObjectSet.Kind) -> @BusActor () -> Void {
        { [weak self] in
            guard let self else { return }
            switch kind {
            case .location: self.streamed.expire(in: self.service)
            case .request: self.answers.expire(in: self.service)
            }
        }
    }
}
