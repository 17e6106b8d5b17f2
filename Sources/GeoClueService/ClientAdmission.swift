import DBus
import Loop
import WhereaboutsCore

/// A client's admission: whether its app may have location now, and at which level. The README's steps 0 to 7, in
/// their order, in ``admissionLevel(claiming:)``; what changes a running client's admission (its session, the user's
/// agent cap, its authorisation) after it.
extension ClientObject {
    /// Runs the admission `ClientLife` asked for, and hands its outcome back as an event.
    func admit(_ purpose: AdmissionPurpose) {
        let claimed = desktopId
        BusActor.task { [self] in
            do throws(DBusError) {
                let level = try await admissionLevel(claiming: claimed)
                apply(.admitted(purpose, level: level, shown: shownLevel, latest: service.lastFix))
            } catch {
                apply(.notAdmitted(purpose, error))
            }
        }
    }

    /// The admission of the client's app (``servedApp(claiming:)``: its sandbox's, the portal's, or `claimed`, the
    /// `DesktopId` when the admission began), step by step; a refusal is `AccessDenied`, as GeoClue's; polkit, logind or
    /// the agent failing or silent denies with its reason. It never waits for an agent to register.
    ///
    /// The steps, numbered as in the README's table, each refusing for its own reason:
    /// 0. the app is known: the owner's identity was read, and a caller outside any sandbox set `DesktopId`;
    /// 1. the configuration allows the app for the user (`restricted`);
    /// 2. its authorisation status, from polkit or the stored decisions (`AccessDenied` with polkit's failure, or
    ///    `LimitsExceeded` when the user has too many checks waiting);
    /// 3. the user's agent cap is not 0 ("Geolocation disabled for UID N");
    /// 4. a sandboxed app not determined is allowed by the user's agent, for this start ("Agent rejected …");
    /// 5. *when in use*: its login session is active;
    /// 6. the level: what it requested, within the grant, the agent's allowance and the cap as they are now;
    /// 7. location services are on (`ServicesDisabled`), checked first and again last, with the client still there
    ///    (`Failed`), as either may change while the steps wait.
    /// A hold that arrives while the steps wait is the client's life to weigh (``ClientLife``).
    private func admissionLevel(claiming claimed: String?) async throws(DBusError) -> AccuracyLevel {
        try requireServices()
        let uid = try await service.uid(of: owner)
        self.uid = uid
        let app = try await servedApp(claiming: claimed)
        admittedApp = app
        try requireExists()
        try requireConfigurationAllows(app.id, uid: uid)
        try await refreshAuthorisation(app, uid: uid)
        let cap = try await requireAgentCapAllows(app.id, uid: uid)
        try await askAgentIfUndetermined(app, uid: uid)
        let session = try await loginSessionIfWhenInUse()
        let admitted = try levelAdmitted(app.id, uid: uid, session: session, cap: cap)
        try requireServices()
        try requireExists()
        return try levelWithinCapNow(admitted, app.id, uid: uid)
    }

    /// The app the client is served as (``ClientApp``): a sandboxed owner's app whatever `DesktopId` says, as
    /// GeoClue decides for a Flatpak app (the property itself stays as written, as in GeoClue); the app the desktop
    /// portal names; otherwise `claimed`, the `DesktopId` as it was when the call began. `AccessDenied` when the
    /// owner's identity could not be read, or when an owner outside any sandbox set no `DesktopId`.
    ///
    /// A caller outside any sandbox that names the portal's own id is served as that claim, as GeoClue serves it:
    /// it is the desktop portal D-Bus-activated outside its systemd unit (a session bus started by `dbus-launch`), or
    /// a process of the user that could claim any other id as well.
    func servedApp(claiming claimed: String?) async throws(DBusError) -> ClientApp {
        let identity = try await service.identity(of: owner)
        guard let app = ClientApp(caller: identity, desktopId: claimed) else {
            throw .accessDenied("'DesktopId' property must be set")
        }
        return app
    }

    /// Answers `call` later with what `body` returns for the caller's Unix user and the app the client is served as
    /// (``servedApp(claiming:)``, claiming the `DesktopId` set when the call began), looked up in that order; what
    /// the lookups or `body` throw fails the call. Needs a `DesktopId` or a sandbox that names the app.
    func answerForApp(
        _ call: MethodCall,
        _ body: @escaping @BusActor (_ uid: UInt32, _ app: ClientApp) async throws(DBusError) -> [DBusValue]
    ) throws(DBusError) -> Reply {
        try whenAppIsKnown(call) { uid, app throws(DBusError) in call.reply(try await body(uid, app)) }
    }

    /// As ``answerForApp(_:_:)``, for an answer that grows with what the service holds: `build` runs in the caller's
    /// turn (``MethodCall/replyInTurn(_:)``), and not at all if the caller leaves first.
    func answerForAppInTurn(
        _ call: MethodCall,
        _ build: @escaping @BusActor (_ uid: UInt32, _ app: ClientApp) throws(DBusError) -> [DBusValue]
    ) throws(DBusError) -> Reply {
        try whenAppIsKnown(call) { uid, app in
            call.replyInTurn { () throws(DBusError) in try build(uid, app) }
        }
    }

    /// Runs `then` once the caller's Unix user and the client's app are known; what the lookups or `then` throw
    /// fails `call`.
    private func whenAppIsKnown(
        _ call: MethodCall,
        _ then: @escaping @BusActor (_ uid: UInt32, _ app: ClientApp) async throws(DBusError) -> Void
    ) throws(DBusError) -> Reply {
        try requireAppNamed()
        let claimed = desktopId
        BusActor.task { [self] in
            do throws(DBusError) {
                let uid = try await service.uid(of: owner)
                try await then(uid, try await servedApp(claiming: claimed))
            } catch {
                call.fail(error)
            }
        }
        return .later
    }

    /// Step 7: fails with `io.github.whereabouts1.Error.ServicesDisabled` while location services are switched off.
    private func requireServices() throws(DBusError) {
        guard service.servicesEnabled else {
            throw DBusError(name: Whereabouts.Error.servicesDisabled, message: "location services are switched off")
        }
    }

    /// Step 7: the client was not deleted while the admission waited.
    private func requireExists() throws(DBusError) {
        guard service.client(id) === self else { throw .failed("the client was deleted") }
    }

    /// Step 1: the configuration's `allowed=false`, or `users=` without the user, restricts the app.
    private func requireConfigurationAllows(_ appID: String, uid: UInt32) throws(DBusError) {
        guard case .disallowed = service.configuration.permission(for: appID, uid: uid) else { return }
        service.logger.notice("'\(appID)' disallowed by configuration")
        update(Authorisation(status: .restricted, approximate: false))
        throw .accessDenied("'\(appID)' disallowed by configuration for UID \(uid)")
    }

    /// Step 3: the user's agent cap, which must not be 0.
    private func requireAgentCapAllows(_ appID: String, uid: UInt32) async throws(DBusError) -> AccuracyLevel? {
        let cap = await service.accuracyCap(uid: uid)
        if cap == AccuracyLevel.none { throw .accessDenied(explain(.disabledByAgent, appID, uid: uid)) }
        return cap
    }

    /// Step 4: asks the user's agent, as GeoClue does at `Start`, whether a sandboxed app not determined may have
    /// location (GeoClue asks about no host app); the answer holds for this start only (the agent keeps its own
    /// memory).
    private func askAgentIfUndetermined(_ app: ClientApp, uid: UInt32) async throws(DBusError) {
        let appID = app.id
        guard authorisation.status == .notDetermined, agentAllowance == nil, app.isSandboxed,
            service.hasAgent(uid: uid)
        else { return }
        let requested = AccuracyLevel(clampingRequested: life.requestedLevel)
        switch await service.authorizeApp(uid: uid, app: appID, level: requested) {
        case .success(let allowed?):
            agentAllowance = allowed
        case .success(nil):
            throw .accessDenied(
                "Agent rejected '\(appID)' for user '\(uid)'. Please ensure that '\(appID)' has installed a valid \(appID).desktop file."
            )
        case .failure(let failure):
            throw .accessDenied("cannot ask the agent: \(failure.message)")
        }
    }

    /// Step 5: the login session of the owner's process, which only *when in use* needs (``LoginSession/unknown``
    /// otherwise).
    private func loginSessionIfWhenInUse() async throws(DBusError) -> LoginSession {
        guard AuthorisationRule.followsSession(authorisation.status, agentAllowance: agentAllowance) else {
            return .unknown
        }
        return try await service.loginSession(of: owner)
    }

    /// Steps 2, 5 and 6 weighed together by ``AuthorisationRule/admission(status:approximate:agentAllowance:requested:session:cap:)``:
    /// an authorised app, in an active session when *when in use*, at the level it may have.
    private func levelAdmitted(_ appID: String, uid: UInt32, session: LoginSession, cap: AccuracyLevel?)
        throws(DBusError) -> AccuracyLevel
    {
        let admission = AuthorisationRule.admission(
            status: authorisation.status, approximate: authorisation.approximate, agentAllowance: agentAllowance,
            requested: AccuracyLevel(clampingRequested: life.requestedLevel), session: session, cap: cap)
        switch admission {
        case .success(let level): return level
        case .failure(let refusal): throw .accessDenied(explain(refusal, appID, uid: uid))
        }
    }

    /// Step 6: the cap as it is now: the agent may have lowered it while the steps were waiting.
    private func levelWithinCapNow(_ admitted: AccuracyLevel, _ appID: String, uid: UInt32) throws(DBusError)
        -> AccuracyLevel
    {
        let level = service.knownCap(uid: uid).map { min(admitted, $0) } ?? admitted
        if level == AccuracyLevel.none { throw .accessDenied(explain(.disabledByAgent, appID, uid: uid)) }
        return level
    }

    /// The message a refusal fails with (GeoClue's wording where GeoClue has one).
    func explain(_ refusal: Refusal, _ appID: String, uid: UInt32) -> String {
        switch refusal {
        case .notAuthorised(let status): "'\(appID)' is not authorised for location (\(status.rawValue))"
        case .sessionInactive: "'\(appID)' is authorised when in use, and its login session is not active"
        case .outsideSession: "'\(appID)' is authorised when in use, and its process is in no login session"
        case .disabledByAgent: "Geolocation disabled for UID \(uid)"
        }
    }

    /// Step 2: recomputes `AuthorisationStatus`, telling the owner when it changed. A refusal is `AccessDenied`, or
    /// `LimitsExceeded` when the user already has too many polkit checks waiting.
    func refreshAuthorisation(_ app: ClientApp, uid: UInt32) async throws(DBusError) {
        let level = AccuracyLevel(clampingRequested: life.requestedLevel)
        switch await service.authorisation(busName: owner, uid: uid, app: app, level: level) {
        case .success(let result): update(result)
        case .failure(let failure) where failure.limitsExceeded:
            throw .limitsExceeded("cannot check authorisation: \(failure.message)")
        case .failure(let failure): throw .accessDenied("cannot check authorisation: \(failure.message)")
        }
    }

    func update(_ value: Authorisation) {
        guard value != authorisation else { return }
        authorisation = value
        emitChanged(
            ["AuthorisationStatus": .string(value.status.rawValue), "Approximate": .boolean(value.approximate)],
            interface: Whereabouts.clientInterface)
    }

    /// The finest level the client may get, its login session aside: the requested level, no finer than city for
    /// an approximate grant, than the agent's allowance for this start, or than the user's agent cap.
    var permittedLevel: AccuracyLevel {
        AuthorisationRule.permittedLevel(
            requested: AccuracyLevel(clampingRequested: life.requestedLevel), approximate: authorisation.approximate,
            agentAllowance: agentAllowance, cap: uid.flatMap { service.knownCap(uid: $0) })
    }

    /// The finest level the client's fixes are shown at: exact unless the user limited the app
    /// (``AuthorisationRule/shownLevel(requested:approximate:agentAllowance:cap:)``).
    var shownLevel: AccuracyLevel {
        AuthorisationRule.shownLevel(
            requested: AccuracyLevel(clampingRequested: life.requestedLevel), approximate: authorisation.approximate,
            agentAllowance: agentAllowance, cap: uid.flatMap { service.knownCap(uid: $0) })
    }

    // MARK: What changes a running client's admission

    /// The process's login session became active or inactive: a client served only *when in use* is held while
    /// it is inactive (`AvailabilityChanged(false, "session-inactive")`) and resumes when it is active again
    /// (`"session-active"`).
    func sessionChanged(active sessionActive: Bool) {
        guard app != nil, AuthorisationRule.followsSession(authorisation.status, agentAllowance: agentAllowance)
        else { return }
        if sessionActive {
            release(.sessionInactive, reason: "session-active")
        } else {
            hold(.sessionInactive, reason: "session-inactive")
        }
    }

    /// The user's agent cap changed (or its agent left): a running client is served at the new level at once
    /// (the latest fix is sent again, shown as the new cap allows; the providers follow); a cap of 0 holds the client
    /// (`AvailabilityChanged(false, "agent-disabled")`) until the cap rises (`"agent-enabled"`).
    func capChanged() {
        apply(
            .permittedLevelChanged(
                permittedLevel, shown: shownLevel, latest: service.lastFix,
                available: service.availableLevel != .none))
    }

    /// Recomputes the authorisation after it changed elsewhere; a client no longer authorised stops at once,
    /// fails its waiting requests and hears `AvailabilityChanged(false, "authorisation-changed")`. A client now
    /// authorised only *when in use* is held if its login session is not active.
    func recheckAuthorisation(uid: UInt32) async {
        do {
            let served: ClientApp
            if let app { served = app } else { served = try await servedApp(claiming: desktopId) }
            try await refreshAuthorisation(served, uid: uid)
        } catch {
            update(Authorisation(status: .notDetermined, approximate: false))
        }
        if AuthorisationRule.followsSession(authorisation.status, agentAllowance: agentAllowance) {
            guard life.isServing || life.resumesLater else { return }
            let session = (try? await service.loginSession(of: owner)) ?? .outside
            if session == .inactive || session == .outside { sessionChanged(active: false) }
            return
        }
        guard !authorisation.status.isAuthorised else {
            // Now authorised beyond its session (always): a session hold no longer applies.
            if life.holds.contains(.sessionInactive) { release(.sessionInactive, reason: "authorisation-changed") }
            return
        }
        agentAllowance = nil
        apply(.revoked)
    }
}
