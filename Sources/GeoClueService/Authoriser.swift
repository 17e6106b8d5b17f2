import DBus
import Loop
import WhereaboutsCore

/// The polkit action ids (`polkit/io.github.whereabouts1.policy`).
public enum PolkitAction {
    public static let whenInUse = "io.github.whereabouts1.location-when-in-use"
    public static let always = "io.github.whereabouts1.location-always"
    public static let manage = "io.github.whereabouts1.manage"

    /// The action that grants `kind`.
    public static func action(for kind: GrantKind) -> String { kind == .always ? always : whenInUse }
}

/// A client's authorisation as last computed, with the precision the user granted.
struct Authorisation: Equatable {
    var status: AuthorisationStatus
    /// True when the user granted approximate location only.
    var approximate: Bool
}

extension GeoClueService {
    /// How long a non-interactive polkit check may take.
    static let checkTimeout: Duration = .seconds(10)
    /// How long the user may take to answer a prompt.
    static let promptTimeout: Duration = .seconds(300)

    /// The authorisation of `client` for the user of `busName`, from polkit, the stored decisions and the
    /// configuration (``AuthorisationRule``); without polkit, from the configuration, the stored decisions and
    /// whether the user has an agent to ask (``AuthorisationRule/statusWithoutPolkit(stored:configuration:agentAsks:)``).
    /// A verified app's stored decision serves only a verified caller (``GrantStore/decision(uid:app:verified:)``).
    func authorisation(busName: String, uid: UInt32, app client: ClientApp, level: AccuracyLevel) async
        -> Result<Authorisation, AuthorisationFailure>
    {
        let app = client.id
        let permission = configuration.permission(for: app, uid: uid)
        let stored = grants.decision(uid: uid, app: app, verified: client.isVerified)
        var approximate = false
        if case .granted(_, let isApproximate) = stored { approximate = isApproximate }
        guard let polkit else {
            let status = AuthorisationRule.statusWithoutPolkit(
                stored: stored, configuration: permission, agentAsks: hasAgent(uid: uid) && client.isSandboxed)
            return .success(Authorisation(status: status, approximate: approximate))
        }
        // always first, from the cache or polkit; when in use only when always leaves the status open. On a cold
        // cache that is one polkit round trip more for the first client of a key, and no check wasted after.
        let session = await polkitSessionKey(of: busName, uid: uid)
        let details = ["app": app, "identity": client.source, "accuracy": String(level.rawValue)]
        let always: PolkitAnswer
        switch await polkit.check(
            busName: busName, uid: uid, session: session, action: PolkitAction.always,
            details: details.merging(["grant": "always"]) { $1 }, interactive: false, timeout: Self.checkTimeout)
        {
        case .success(let answer): always = answer
        case .failure(let failure): return denied(app, uid: uid, failure)
        }
        var whenInUse = PolkitAnswer.no
        if AuthorisationRule.needsWhenInUse(always: always, stored: stored, configuration: permission) {
            switch await polkit.check(
                busName: busName, uid: uid, session: session, action: PolkitAction.whenInUse,
                details: details.merging(["grant": "when-in-use"]) { $1 }, interactive: false,
                timeout: Self.checkTimeout)
            {
            case .success(let answer): whenInUse = answer
            case .failure(let failure): return denied(app, uid: uid, failure)
            }
        }
        let status = AuthorisationRule.status(
            always: always, whenInUse: whenInUse, stored: stored, configuration: permission)
        return .success(Authorisation(status: status, approximate: approximate))
    }

    /// Logs a failed check (a few lines per user every 10 s, then a count of those left out) and fails with it.
    private func denied(_ app: String, uid: UInt32, _ failure: AuthorisationFailure)
        -> Result<Authorisation, AuthorisationFailure>
    {
        polkit?.warn(uid: uid, "polkit: \(failure.message); denying location to '\(app)' of UID \(uid)")
        return .failure(failure)
    }

    /// Asks the user to grant `kind` to `app`, and stores the outcome: a grant, or a refusal. The user's other
    /// clients of the app are re-checked, so that their status follows the decision.
    ///
    /// Where the user has a GeoClue agent, its `AuthorizeApp` is the prompt (an allowed level of city or coarser
    /// makes the grant approximate), as GeoClue's dialog is. Any process of the user can register an agent and
    /// answer its own prompt, so with polkit the agent's yes is stored as *when in use* only (a dialog's "allow
    /// while using"), and *always* is stored only on polkit's own yes, asked with user interaction allowed: where
    /// polkit says challenge, the user's polkit agent asks for the password polkit's policy names. Without polkit
    /// (`[authorisation] polkit=false`) the agent decides alone, as in GeoClue. Without an agent, polkit asks.
    ///
    /// The decision is stored as verified when `client` is (``ClientApp/isVerified``), so that no caller merely
    /// claiming its id gets it.
    func requestGrant(
        _ kind: GrantKind, approximate: Bool, busName: String, uid: UInt32, app client: ClientApp, level: AccuracyLevel
    )
        async -> Result<Void, AuthorisationFailure>
    {
        let app = client.id
        let storeDecision = { (decision: StoredDecision) async in
            await self.storeDecision(decision, uid: uid, app: app, verified: client.isVerified)
        }
        var outcome: Result<Void, AuthorisationFailure> = .success(())
        if hasAgent(uid: uid) {
            switch await authorizeApp(uid: uid, app: app, level: level) {
            case .failure(let failure):
                return .failure(failure)
            case .success(nil):
                await storeDecision(.denied)
            case .success(let allowed?):
                let approximate = approximate || allowed <= .city
                let byAgent: GrantKind = authoriser == nil ? kind : .whenInUse
                await storeDecision(.granted(byAgent, approximate: approximate))
                if byAgent != kind {
                    switch await askPolkit(
                        .always, approximate: approximate, busName: busName, app: client, level: level)
                    {
                    case .success(true):
                        await storeDecision(.granted(.always, approximate: approximate))
                    case .success(false): break
                    case .failure(let failure): outcome = .failure(failure)
                    }
                }
            }
        } else if authoriser != nil {
            switch await askPolkit(kind, approximate: approximate, busName: busName, app: client, level: level) {
            case .failure(let failure): return .failure(failure)
            case .success(let granted):
                await storeDecision(granted ? .granted(kind, approximate: approximate) : .denied)
            }
        } else {
            return .success(())
        }
        await recheck(uid: uid, app: app)
        return outcome
    }

    /// polkit's interactive answer to granting `kind`: true for yes, false for no or an unmet challenge (a prompt
    /// refused, dismissed or that no polkit agent could show).
    private func askPolkit(
        _ kind: GrantKind, approximate: Bool, busName: String, app: ClientApp, level: AccuracyLevel
    ) async -> Result<Bool, AuthorisationFailure> {
        guard let authoriser else { return .success(false) }
        let details = [
            "app": app.id, "identity": app.source, "accuracy": String(level.rawValue), "grant": kind.rawValue,
            "approximate": approximate ? "true" : "false",
        ]
        return await authoriser.check(
            busName: busName, action: PolkitAction.action(for: kind), details: details, interactive: true,
            timeout: Self.promptTimeout
        ).map { $0 == .yes }
    }

    /// Stores a decision and waits until it is on disk (``saveGrants()``), so that the reply that follows confirms
    /// a durable decision. A decision the store refuses (past the user's share) is not stored, with a log line.
    private func storeDecision(_ decision: StoredDecision, uid: UInt32, app: String, verified: Bool) async {
        if let refusal = grants.set(decision, uid: uid, app: app, verified: verified) {
            logger.warning("grants: the decision of user \(uid) about '\(app)' is not stored: \(refusal)")
            return
        }
        polkit?.grantsChanged(uid: uid)
        let write = saveGrants()
        logger.notice("grants: user \(uid) \(decision.logText) '\(app)'\(verified ? " (verified)" : "")")
        _ = await write?.ended()
    }
}

extension StoredDecision {
    var logText: String {
        switch self {
        case .granted(let kind, let approximate): "granted \(kind.rawValue)\(approximate ? " (approximate)" : "") to"
        case .denied: "refused"
        }
    }
}

extension GeoClueService {
    /// `io.github.whereabouts1.Manager.ListGrants(b all_users) → a(ussbb)`: the stored decisions (user id, app,
    /// "always", "when-in-use" or "denied", approximate, verified) of the caller's user, or of every user with the
    /// management action. A user may have a verified and a claimed decision about one app id.
    func listGrants(_ call: MethodCall, allUsers: Bool) {
        BusActor.task { [self] in
            do throws(DBusError) {
                let uid = try await uid(of: call.sender)
                if allUsers { try await requireManagement(call) }
                call.replyInTurn { [self] in
                    let rows = grants.decisions.keys.sorted().filter { allUsers || $0.uid == uid }.map { key in
                        let (decision, approximate): (String, Bool) =
                            switch grants.decisions[key]! {
                            case .granted(let kind, let approximate): (kind.rawValue, approximate)
                            case .denied: ("denied", false)
                            }
                        return DBusValue.structure([
                            .uint32(key.uid), .string(key.app), .string(decision), .boolean(approximate),
                            .boolean(key.verified),
                        ])
                    }
                    return [.array(element: "(ussbb)", rows)]
                }
            } catch {
                call.fail(error)
            }
        }
    }

    /// `io.github.whereabouts1.Manager.RevokeGrant(u uid, s app)`: forgets a user's decisions about an app, verified
    /// and claimed. A user may revoke their own; another user's needs the management action. Affected clients are re-checked at once
    /// and stop receiving fixes if no longer authorised.
    func revokeGrant(_ call: MethodCall, uid target: UInt32, app: String) {
        BusActor.task { [self] in
            do throws(DBusError) {
                let uid = try await uid(of: call.sender)
                if uid != target { try await requireManagement(call) }
                let keys = grants.keys(uid: target, app: app)
                if !keys.isEmpty {
                    for key in keys { grants.set(nil, uid: target, app: app, verified: key.verified) }
                    polkit?.grantsChanged(uid: target)
                    let write = saveGrants()
                    logger.notice("grants: the decision of user \(target) about '\(app)' was revoked")
                    _ = await write?.ended()
                }
                for verified in [false, true] {
                    regions.revoked(RegionOwner(user: target, app: app, verified: verified))
                }
                call.reply()
                await recheck(uid: target, app: app)
            } catch {
                call.fail(error)
            }
        }
    }

    /// `Set` of `io.github.whereabouts1.Manager.LocationServicesEnabled`: with the management action, switches
    /// location services on or off. Off, every client stops at once (`Active` false, waiting requests fail with
    /// `io.github.whereabouts1.Error.ServicesDisabled`, `AvailabilityChanged(false, "services-disabled")`); on
    /// again, the clients it stopped start again by themselves.
    func switchServices(_ call: MethodCall, enabled: Bool) {
        managing(call) { self.setServicesEnabled(enabled) }
    }

    /// Answers `call` once the caller has the management action: runs `change`, then replies; or fails the call.
    func managing(_ call: MethodCall, _ change: @escaping @BusActor () -> Void) {
        BusActor.task { [self] in
            do throws(DBusError) {
                try await requireManagement(call)
                change()
                call.reply()
            } catch {
                call.fail(error)
            }
        }
    }

    /// Fails unless polkit grants the caller `io.github.whereabouts1.manage` (interactively when the caller allows).
    /// Without polkit (`[authorisation] polkit=false`) only root may manage.
    func requireManagement(_ call: MethodCall) async throws(DBusError) {
        guard let polkit else {
            guard try await uid(of: call.sender) == 0 else {
                throw .accessDenied("without polkit, only root may manage location")
            }
            return
        }
        let caller = try await uid(of: call.sender)
        let answer = await polkit.check(
            busName: call.sender, uid: caller, session: nil, action: PolkitAction.manage, details: [:],
            interactive: call.message.allowsInteractiveAuthorization, timeout: Self.promptTimeout)
        switch answer {
        case .success(.yes): return
        case .success: throw .accessDenied("managing location needs the io.github.whereabouts1.manage authorisation")
        case .failure(let failure): throw .accessDenied("cannot check authorisation: \(failure.message)")
        }
    }
}
