import DBus
import Loop
import WhereaboutsCore

/// A client's authorisation calls, `io.github.whereabouts1.Client.CheckAuthorisation` and `RequestAuthorisation`:
/// what the app may have, asked of nobody or of the user.
extension ClientObject {
    /// `CheckAuthorisation() → s status`: recomputes `AuthorisationStatus` without asking anyone.
    func checkAuthorisation(_ call: MethodCall) throws(DBusError) -> Reply {
        try answerForApp(call) { [self] uid, app throws(DBusError) in
            try await recomputeAuthorisation(app, uid: uid)
            return [.string(authorisation.status.rawValue)]
        }
    }

    /// Recomputes `AuthorisationStatus` for `app` and `uid` without asking anyone: `restricted` when the
    /// configuration refuses the app, otherwise what polkit and the stored decisions say.
    func recomputeAuthorisation(_ app: ClientApp, uid: UInt32) async throws(DBusError) {
        if case .disallowed = service.configuration.permission(for: app.id, uid: uid) {
            update(Authorisation(status: .restricted, approximate: false))
        } else {
            try await refreshAuthorisation(app, uid: uid)
        }
    }

    /// `RequestAuthorisation(s grant, a{sv} options) → s status`: asks the user through polkit, with user
    /// interaction allowed, for `when-in-use` or `always`; option `approximate` (b) asks for approximate location
    /// only. The outcome is stored as the user's decision; an app that already has what it asks for, or that
    /// policy restricts, is not asked.
    func requestAuthorisation(_ call: MethodCall) throws(DBusError) -> Reply {
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
        return try answerForApp(call) { [self] uid, app throws(DBusError) in
            try await refreshAuthorisation(app, uid: uid)
            let held = authorisation.status
            let satisfied = held == .authorisedAlways || (held == .authorisedWhenInUse && kind == .whenInUse)
            if !satisfied && held != .restricted {
                if let limit = service.grants.refusal(
                    of: .granted(.whenInUse, approximate: true), uid: uid, app: app.id, verified: app.isVerified)
                {
                    throw .limitsExceeded("cannot store a decision about '\(app.id)': \(limit)")
                }
                let result = await service.requestGrant(
                    kind, approximate: approximate, busName: owner, uid: uid, app: app, level: permittedLevel)
                if case .failure(let failure) = result { throw .failed("cannot ask: \(failure.message)") }
                try await refreshAuthorisation(app, uid: uid)
            }
            return [.string(authorisation.status.rawValue)]
        }
    }
}
