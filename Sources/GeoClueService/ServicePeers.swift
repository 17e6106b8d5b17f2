import DBus
import Loop
import WhereaboutsCore

/// What the bus and the system say about the connections that call: user, process, identity, login session.
extension GeoClueService {
    /// The Unix user of the connection `name`, asked of the bus once and remembered while it is connected.
    ///
    /// A connection that goes away while the bus is being asked fails the lookup, so that nothing is created or
    /// remembered for it after its clients were dropped.
    func uid(of name: String) async throws(DBusError) -> UInt32 {
        try await credentials(of: name).uid
    }

    /// Hands `body` the Unix user of the connection `name` (``PeerCredentials``): at once when it is known, otherwise
    /// once the bus answered.
    func withUID(of name: String, _ body: @escaping @BusActor (Result<UInt32, DBusError>) -> Void) {
        peers.withUser(of: name, body)
    }

    /// What the system says about the connection `name`'s process (``PeerCredentials``); `AccessDenied` when its
    /// process was gone before it could be read, or its sandbox says something unreadable.
    func identity(of name: String) async throws(DBusError) -> CallerIdentity {
        try await peers.identity(of: name)
    }

    /// The identity of the connection `name`, when it is known already and could be read.
    func knownIdentity(of name: String) -> CallerIdentity? { peers.knownIdentity(of: name) }

    /// Why the identity of the connection `name` could not be read, when that is known already.
    func identityFailure(of name: String) -> DBusError? { peers.identityFailure(of: name) }

    /// The Unix user and process of the connection `name` (``PeerCredentials``).
    private func credentials(of name: String) async throws(DBusError) -> (uid: UInt32, pid: UInt32?) {
        try await peers.credentials(of: name)
    }

    /// The login session of the connection `name` of user `uid` as a part of the key of polkit's reused answers,
    /// or nil when logind failed or the connection left meanwhile (the answer is then not reused).
    func polkitSessionKey(of name: String, uid: UInt32) async -> PolkitSessionKey? {
        guard let (_, pid) = try? await credentials(of: name) else { return nil }
        switch await sessions.session(of: name, pid: pid, uid: uid) {
        case .failure: return nil
        case .success(.unknown): return .unknown
        case .success(.outside): return PolkitSessionKey.none
        case .success(let state):
            guard let path = sessions.sessionPath(of: name) else { return nil }
            return .session(id: path.rawValue, active: state == .active)
        }
    }

    /// The login session of the connection `name`'s process (``SessionMonitor``).
    func loginSession(of name: String) async throws(DBusError) -> LoginSession {
        let (uid, pid) = try await credentials(of: name)
        switch await sessions.session(of: name, pid: pid, uid: uid) {
        case .success(let session): return session
        case .failure(let failure):
            if let line = logindWarnings.line("logind: \(failure.message)", for: uid, now: clock.monotonicNow) {
                logger.warning(line)
            }
            throw .accessDenied("cannot check the login session: \(failure.message)")
        }
    }
}
