import DBus
import Loop
import WhereaboutsCore

/// `Introspect` calls: how many a caller may make, and what it is shown.
extension GeoClueService {
    /// Refuses an `Introspect` from `sender` beyond its user's rate (``introspections``).
    func admitIntrospection(from sender: String) -> DBusError? {
        let caller: IntrospectionCaller = peers.knownUser(of: sender).map { .user($0) } ?? .connection(sender)
        guard introspections.admit(caller, now: clock.monotonicNow) == .suppress else { return nil }
        let who = peers.knownUser(of: sender).map { "UID \($0)" } ?? sender
        return .limitsExceeded("\(who) has made more than \(introspections.burst) Introspect calls in a second")
    }

    /// What an `Introspect` caller is shown: every client and Location object for those who administer the service
    /// (``seesEveryone(_:)``), as GeoClue shows everyone; its own connection's otherwise. Counted as a held call while
    /// the caller's credentials or polkit are asked.
    func introspectionView(for call: MethodCall) async throws(DBusError) -> IntrospectionView {
        try hold(call)
        return try await seesEveryone(call.sender) ? .everything : .own
    }
}

/// Whose `Introspect` calls are counted together: a user's, or a connection's whose user is not known yet.
enum IntrospectionCaller: Hashable, Sendable {
    case user(UInt32)
    case connection(String)
}
