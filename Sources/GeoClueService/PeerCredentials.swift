import DBus
import Loop
import WhereaboutsCore
import WhereaboutsStorage

/// The Unix user, process and identity of each connection that asked for something, asked of the bus once and
/// remembered while it is connected.
///
/// The identity (``CallerIdentity``: the sandbox, the desktop portal) is read from the process's cgroup and the
/// connection's security label at once after the bus answers, the earliest the process can be known. A process
/// gone by then (or whose pid now belongs to another user), or whose sandbox says something unreadable, leaves the
/// connection without an identity, for good: its calls that need one are refused, and it is never taken for a
/// caller outside any sandbox.
///
/// A connection that goes away while the bus is being asked fails the lookup, so that nothing is created or
/// remembered for it after its clients were dropped.
@BusActor
final class PeerCredentials {
    /// What is known of a connection.
    private struct Peer {
        var uid: UInt32
        var pid: UInt32?
        var identity: Result<CallerIdentity, DBusError>
    }

    private let connection: Connection
    private var known: [String: Peer] = [:]
    /// Connections whose credentials are being asked of the bus (once for each, however many wait), and what waits
    /// for them. A waiter is a closure, not a task: a burst of new connections keeps a few dozen bytes for each.
    private var lookups: [String: [@BusActor (Result<Peer, DBusError>) -> Void]] = [:]
    /// Connections that went away while their credentials were being asked.
    private var vanishedDuringLookup: Set<String> = []
    /// Called once with a connection's user, when it is first known.
    var onIdentified: (@BusActor (String, UInt32) -> Void)?
    /// Called with a connection's user and a line to log when its identity cannot be read.
    var onUnidentifiable: (@BusActor (UInt32, String) -> Void)?

    init(connection: Connection) {
        self.connection = connection
    }

    /// The user of the connection `name`, if it is known already.
    func knownUser(of name: String) -> UInt32? { known[name]?.uid }

    /// The identity of the connection `name`, if it is known already and could be read.
    func knownIdentity(of name: String) -> CallerIdentity? { try? known[name]?.identity.get() }

    /// Why the identity of the connection `name` could not be read, if it is known already that it could not.
    func identityFailure(of name: String) -> DBusError? {
        guard case .failure(let error)? = known[name]?.identity else { return nil }
        return error
    }

    /// Hands `body` the user of the connection `name`, asked of the bus unless known: at once when it is known,
    /// otherwise on the loop once the bus answered.
    func withUser(of name: String, _ body: @escaping @BusActor (Result<UInt32, DBusError>) -> Void) {
        withPeer(name) { body($0.map(\.uid)) }
    }

    /// Starts asking the bus about the connection `name` unless it is known or being asked about already: for a
    /// caller whose calls need no user, so that its calls still take its user's turns once the bus answers.
    func lookUp(_ name: String) {
        guard !name.isEmpty, known[name] == nil, lookups[name] == nil else { return }
        withPeer(name) { _ in }
    }

    /// The user and process of the connection `name`, asked of the bus unless known.
    func credentials(of name: String) async throws(DBusError) -> (uid: UInt32, pid: UInt32?) {
        let peer = try await peer(name)
        return (peer.uid, peer.pid)
    }

    /// The identity of the connection `name`'s process; `AccessDenied` when it could not be read.
    func identity(of name: String) async throws(DBusError) -> CallerIdentity {
        try await peer(name).identity.get()
    }

    private func peer(_ name: String) async throws(DBusError) -> Peer {
        if let peer = known[name] { return peer }
        let result = await withCheckedContinuation { continuation in
            withPeer(name) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Hands `body` what is known of the connection `name`: at once when it is known; otherwise once the one lookup
    /// for it answered (started by the first that waits).
    private func withPeer(_ name: String, _ body: @escaping @BusActor (Result<Peer, DBusError>) -> Void) {
        if let peer = known[name] { return body(.success(peer)) }
        lookups[name, default: []].append(body)
        guard lookups[name]?.count == 1 else { return }
        connection.credentials(of: name) { [self] reply in
            let waiting = lookups.removeValue(forKey: name) ?? []
            lookups.releaseUnusedCapacity()
            let outcome = learn(name, from: reply)
            for body in waiting { body(outcome) }
        }
    }

    /// What the bus's answer about the connection `name` makes known; a connection that went away meanwhile is
    /// not remembered.
    private func learn(_ name: String, from answer: Result<PeerCredentialsReply, DBusError>) -> Result<Peer, DBusError>
    {
        let vanished = vanishedDuringLookup.remove(name) != nil
        let reply: PeerCredentialsReply
        switch answer {
        case .failure(let error): return .failure(error)
        case .success(let credentials): reply = credentials
        }
        guard !vanished else {
            return .failure(DBusError(name: DBusError.Name.nameHasNoOwner, message: "\(name) went away"))
        }
        let peer = Peer(uid: reply.uid, pid: reply.pid, identity: identity(of: name, reply))
        known[name] = peer
        onIdentified?(name, reply.uid)
        return .success(peer)
    }

    /// The identity that `reply`'s process and label give, or why there is none.
    private func identity(of name: String, _ reply: PeerCredentialsReply) -> Result<CallerIdentity, DBusError> {
        let failure: String
        if let pid = reply.pid {
            switch ProcessCgroup.read(pid: pid) {
            case .success(let process)
            where process.effectiveUser != reply.uid && process.effectiveUser != ProcessCgroup.overflowUser:
                // The pid was reused: the process that connected is gone. (The packaged daemon maps only its own
                // user and root, and sees every other user as the overflow user: then this cannot be told.)
                failure = "process \(pid) is gone (the pid is now a process of UID \(process.effectiveUser))"
            case .success(let process):
                do throws(AppIdentityError) {
                    return .success(
                        try AppIdentityParsing.caller(
                            cgroup: process.cgroup, securityLabel: reply.securityLabel, uid: reply.uid))
                } catch {
                    failure = error.description
                }
            case .failure(let error): failure = error.description
            }
        } else {
            failure = "the bus gave no process for it"
        }
        onUnidentifiable?(reply.uid, "cannot tell which app \(name) of UID \(reply.uid) is: \(failure)")
        return .failure(.accessDenied("cannot tell which app the caller is: \(failure)"))
    }

    /// The connection `name` left: its credentials are forgotten, and lookups still running for it fail.
    func vanished(_ name: String) {
        known[name] = nil
        known.releaseUnusedCapacity()
        if lookups[name] != nil { vanishedDuringLookup.insert(name) }
    }
}
