/// How many calls the service holds unanswered, per connection, per Unix user and in all, so that no peer can make
/// it hold more than its share: a call that would pass a limit is refused at once.
///
/// A connection's calls count against its user once the user is known (``identify(_:as:)``, after the
/// connection's first credentials lookup, one bus round trip). No user can be charged for the calls held before,
/// so they have limits of their own (``UntilIdentified``). A connection with no call held is forgotten.
public struct HeldCallLedger<Connection: Hashable & Sendable>: Sendable {
    /// The limits.
    public typealias Limits = ShareLimits
    /// Which limit a call would pass, and how many calls were held against it.
    public typealias Refusal = ShareLimitReached

    /// What the connections whose user is not known yet may hold: each as much as any connection while their calls
    /// together number fewer than `inAll`, and past that `perConnection` each. A burst of new connections, or one
    /// that sends many calls at once, is held as GeoClue would hold it; a flood of new connections is not, and as
    /// the bus bounds how many connections one user has, that bound times `perConnection`, plus `inAll`, bounds what
    /// one user holds before it is known.
    public struct UntilIdentified: Sendable, Equatable {
        public var inAll: Int
        public var perConnection: Int

        public init(inAll: Int, perConnection: Int) {
            self.inAll = inAll
            self.perConnection = perConnection
        }
    }

    public let limits: Limits
    public let untilIdentified: UntilIdentified
    private var byConnection: [Connection: Int] = [:]
    private var userOf: [Connection: UInt32] = [:]
    private var byUser: [UInt32: Int] = [:]
    /// The calls held in all.
    public private(set) var total = 0
    /// The calls held for connections whose user is not known yet.
    public private(set) var unidentified = 0

    public init(limits: Limits, untilIdentified: UntilIdentified) {
        self.limits = limits
        self.untilIdentified = untilIdentified
    }

    /// The calls held for `connection`.
    public func held(by connection: Connection) -> Int { byConnection[connection] ?? 0 }

    /// The calls held for the connections of `user` known to be its.
    public func held(byUser user: UInt32) -> Int { byUser[user] ?? 0 }

    /// Counts one more call of `connection`, run by `user` when known; or says which limit it would pass.
    public mutating func hold(_ connection: Connection, user: UInt32?) -> Refusal? {
        if let user { identify(connection, as: user) }
        let mine = byConnection[connection] ?? 0
        let owner = userOf[connection] ?? user
        let connectionLimit =
            owner != nil || unidentified < untilIdentified.inAll
            ? limits.perConnection : min(untilIdentified.perConnection, limits.perConnection)
        guard mine < connectionLimit else { return .connection(held: mine) }
        if let owner {
            let users = byUser[owner] ?? 0
            guard users < limits.perUser else { return .user(owner, held: users) }
        }
        guard total < limits.total else { return .total(held: total) }
        byConnection[connection] = mine + 1
        if let owner {
            userOf[connection] = owner
            byUser[owner, default: 0] += 1
        } else {
            unidentified += 1
        }
        total += 1
        return nil
    }

    /// Counts the calls `connection` holds against `user` from now on.
    public mutating func identify(_ connection: Connection, as user: UInt32) {
        guard userOf[connection] == nil, let mine = byConnection[connection] else { return }
        userOf[connection] = user
        byUser[user, default: 0] += mine
        unidentified -= mine
    }

    /// One call of `connection` was answered.
    public mutating func release(_ connection: Connection) {
        guard let mine = byConnection[connection] else { return }
        total -= 1
        if let user = userOf[connection] {
            let users = (byUser[user] ?? 1) - 1
            byUser[user] = users > 0 ? users : nil
            byUser.releaseUnusedCapacity()
        } else {
            unidentified -= 1
        }
        if mine > 1 {
            byConnection[connection] = mine - 1
        } else {
            byConnection[connection] = nil
            userOf[connection] = nil
            byConnection.releaseUnusedCapacity()
            userOf.releaseUnusedCapacity()
        }
    }
}
