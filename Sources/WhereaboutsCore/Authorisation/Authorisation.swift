/// An app's authorisation for location, for one user, as phones report it.
///
/// `io.github.whereabouts1.Client.AuthorisationStatus` carries the raw value.
public enum AuthorisationStatus: String, Sendable, CaseIterable {
    /// Nobody has decided yet; the app may ask with `RequestAuthorisation`.
    case notDetermined
    /// Policy forbids it (polkit said no, or the configuration refuses the app); asking changes nothing.
    case restricted
    /// The user refused it.
    case denied
    /// Location while the app's login session is active.
    case authorisedWhenInUse
    /// Location at any time, also from inactive sessions and outside any session.
    case authorisedAlways

    /// True for the two authorised states.
    public var isAuthorised: Bool { self == .authorisedWhenInUse || self == .authorisedAlways }
}

/// The grant an app asks for or holds.
public enum GrantKind: String, Sendable, CaseIterable, Comparable {
    case whenInUse = "when-in-use"
    case always = "always"

    public static func < (lhs: GrantKind, rhs: GrantKind) -> Bool { lhs == .whenInUse && rhs == .always }

    /// The status this grant gives.
    public var status: AuthorisationStatus { self == .always ? .authorisedAlways : .authorisedWhenInUse }
}

/// polkit's answer for one action: `CheckAuthorization`'s `is_authorized` and `is_challenge`.
public enum PolkitAnswer: Sendable, Equatable {
    case yes
    case no
    /// Authorised only after the user confirms (an `auth_*` default or a rule returning `AUTH_*`).
    case challenge
}

/// The user's stored decision for one app, as the grant store keeps it.
public enum StoredDecision: Sendable, Equatable {
    /// The user granted this.
    case granted(GrantKind, approximate: Bool)
    /// The user refused.
    case denied
}

/// How polkit, the user's stored decision and the configuration combine into a status.
///
/// 1. The configuration refusing the app (`allowed=false`, or a `users=` list without the user) gives
///    `restricted`, as GeoClue's configuration does.
/// 2. polkit's *no* for both actions gives `restricted`: an administrator's rule always wins.
/// 3. polkit's *yes* is yes: for `always`, `authorisedAlways`; else for `when-in-use`, `authorisedWhenInUse`.
/// 4. polkit's *challenge* is met by a stored grant of that kind (`always` also meets a when-in-use challenge),
///    or by `allowed=true` in the configuration, which counts as a stored `always` grant (GeoClue lets such an app
///    in without asking).
/// 5. A stored refusal gives `denied`; otherwise the app is `notDetermined` until it asks.
public enum AuthorisationRule {
    /// The status from polkit's answers for the two actions, the stored decision and the configuration.
    public static func status(
        always: PolkitAnswer, whenInUse: PolkitAnswer, stored: StoredDecision?, configuration: AppPermission
    ) -> AuthorisationStatus {
        if configuration == .disallowed { return .restricted }
        if always == .no && whenInUse == .no { return .restricted }
        if always == .yes { return .authorisedAlways }
        let storedGrant: GrantKind? =
            if configuration == .allowed { .always } else if case .granted(let kind, _) = stored { kind } else { nil }
        if always == .challenge, storedGrant == .always { return .authorisedAlways }
        if whenInUse == .yes { return .authorisedWhenInUse }
        if whenInUse == .challenge, storedGrant != nil { return .authorisedWhenInUse }
        if stored == .denied { return .denied }
        return .notDetermined
    }

    /// False when the status is decided without polkit's answer for *when in use*: the configuration refuses the
    /// app, *always* is yes, or *always* is a challenge met by a stored *always* grant (or `allowed=true`).
    public static func needsWhenInUse(always: PolkitAnswer, stored: StoredDecision?, configuration: AppPermission)
        -> Bool
    {
        if configuration == .disallowed || always == .yes { return false }
        if always == .challenge {
            if configuration == .allowed { return false }
            if case .granted(.always, _) = stored { return false }
        }
        return true
    }

    /// The status without polkit (`[authorisation] polkit=false`), as GeoClue decides: the configuration refusing
    /// the app gives `restricted` and `allowed=true` gives `authorisedAlways`; otherwise the user's stored decision
    /// stands; an app nobody decided about is `notDetermined` when the user's agent asks about it (`agentAsks`:
    /// an agent is registered and the app is sandboxed, the only apps GeoClue asks agents about), which it does at
    /// `Start`, and `authorisedAlways` otherwise, as GeoClue lets in a host app, or any app when no agent runs.
    public static func statusWithoutPolkit(stored: StoredDecision?, configuration: AppPermission, agentAsks: Bool)
        -> AuthorisationStatus
    {
        switch (configuration, stored) {
        case (.disallowed, _): .restricted
        case (.allowed, _): .authorisedAlways
        case (_, .granted(let kind, _)?): kind.status
        case (_, .denied?): .denied
        case (_, nil): agentAsks ? .notDetermined : .authorisedAlways
        }
    }

    /// The finest level a GeoClue agent's `u` accuracy value allows (`MaxAccuracyLevel`, or `AuthorizeApp`'s
    /// `allowed_accuracy_level`): the largest level not above it, `none` for 0.
    public static func level(fromAgentValue value: UInt32) -> AccuracyLevel {
        AccuracyLevel.allCases.last { $0.rawValue <= value } ?? .none
    }

    /// The level a client may be served at, before its login session is considered: what it requested, no finer
    /// than city for an approximate grant, than what the agent allowed for this start, and than the user's agent
    /// cap (`MaxAccuracyLevel`). `none` when the cap is 0.
    public static func permittedLevel(
        requested: AccuracyLevel, approximate: Bool, agentAllowance: AccuracyLevel?, cap: AccuracyLevel?
    ) -> AccuracyLevel {
        var level = requested
        if approximate { level = min(level, .city) }
        if let agentAllowance { level = min(level, agentAllowance) }
        if let cap { level = min(level, cap) }
        return level
    }

    /// The finest level a client's fixes are shown at: exact, unless the user or administrator limited the app —
    /// an approximate grant (city), the agent's allowance for this start below the requested level (an agent that
    /// allows what was asked limits nothing), or the user's agent cap (`MaxAccuracyLevel`) below exact, a ceiling
    /// on every app of the user — and then the finest of those limits. The level an app requests chooses the
    /// providers that run for it, as in GeoClue; it never coarsens what it is served.
    public static func shownLevel(
        requested: AccuracyLevel, approximate: Bool, agentAllowance: AccuracyLevel?, cap: AccuracyLevel?
    ) -> AccuracyLevel {
        var level = AccuracyLevel.exact
        if approximate { level = min(level, .city) }
        if let agentAllowance, agentAllowance < requested { level = min(level, agentAllowance) }
        if let cap { level = min(level, cap) }
        return level
    }

    /// Whether a client may receive fixes now, and at which level.
    ///
    /// An app is served when it is authorised, or when it is `notDetermined` and the user's agent allowed it for
    /// this start (`agentAllowance`, which then counts as *when in use*). *When in use* needs the process's login
    /// session to be active (or logind to be absent, when nobody can tell); *always* ignores sessions. The level
    /// is ``permittedLevel(requested:approximate:agentAllowance:cap:)``; a cap of 0 refuses.
    public static func admission(
        status: AuthorisationStatus, approximate: Bool, agentAllowance: AccuracyLevel?, requested: AccuracyLevel,
        session: LoginSession, cap: AccuracyLevel?
    ) -> Result<AccuracyLevel, Refusal> {
        switch status {
        case .authorisedAlways: break
        case .authorisedWhenInUse: if let refusal = session.refusal { return .failure(refusal) }
        case .notDetermined where agentAllowance != nil: if let refusal = session.refusal { return .failure(refusal) }
        default: return .failure(.notAuthorised(status))
        }
        let level = permittedLevel(
            requested: requested, approximate: approximate, agentAllowance: agentAllowance, cap: cap)
        return level == .none ? .failure(.disabledByAgent) : .success(level)
    }

    /// True when `status` (with an agent's allowance for this start, if any) is served only while the login
    /// session is active.
    public static func followsSession(_ status: AuthorisationStatus, agentAllowance: AccuracyLevel?) -> Bool {
        status == .authorisedWhenInUse || (status == .notDetermined && agentAllowance != nil)
    }
}

/// What logind says about the login session of a client's process.
public enum LoginSession: Sendable, Equatable {
    /// The session is the active one of its seat (or has no seat and is online).
    case active
    /// The session exists but is not active: locked away behind another user's, or switched away from.
    case inactive
    /// The process belongs to no login session, and its user has no graphical one.
    case outside
    /// logind is not on the bus, so nobody can tell; *when in use* then holds.
    case unknown

    /// Why *when in use* is refused in this session, or nil when it holds.
    var refusal: Refusal? {
        switch self {
        case .active, .unknown: nil
        case .inactive: .sessionInactive
        case .outside: .outsideSession
        }
    }
}

/// Why a client may not receive fixes now.
public enum Refusal: Error, Sendable, Equatable {
    /// The app is not authorised (nor allowed by the agent for this start).
    case notAuthorised(AuthorisationStatus)
    /// *When in use*, and the process's login session is not active.
    case sessionInactive
    /// *When in use*, and the process is in no login session.
    case outsideSession
    /// The user's agent allows no location (`MaxAccuracyLevel` 0).
    case disabledByAgent
}
