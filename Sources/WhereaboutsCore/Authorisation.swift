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

    /// Whether a client with `status` may receive fixes now, given whether its login session is active
    /// (nil: the caller is in no session).
    public static func mayReceive(_ status: AuthorisationStatus, sessionActive: Bool?) -> Bool {
        switch status {
        case .authorisedAlways: true
        case .authorisedWhenInUse: sessionActive == true
        default: false
        }
    }
}
