/// The clients a service holds: by number, by the connection that owns them and counted by Unix user, within the
/// most one connection, one user and everyone together may hold.
///
/// Every change costs the same whatever the number of clients, but for removing all of one connection's clients,
/// which is linear in how many it owned.
public struct ClientRegistry<Client: AnyObject> {
    public let limits: ShareLimits
    private var clients: [UInt32: (client: Client, owner: String, uid: UInt32)] = [:]
    /// The numbers of each connection's clients, ascending: the order they were made in.
    private var byOwner: [String: [UInt32]] = [:]
    private var byUser: [UInt32: Int] = [:]
    private var lastNumber: UInt32 = 0

    public init(limits: ShareLimits) { self.limits = limits }

    /// How many clients there are.
    public var count: Int { clients.count }

    /// Every client, in no particular order.
    public var all: some Collection<Client> { clients.values.lazy.map(\.client) }

    /// The client numbered `number`.
    public subscript(number: UInt32) -> Client? { clients[number]?.client }

    /// The numbers of every client, in no particular order.
    public var numbers: some Collection<UInt32> { clients.keys }

    /// The numbers of the clients `owner` made that are still there, ascending.
    public func numbers(ownedBy owner: String) -> [UInt32] { byOwner[owner] ?? [] }

    /// The first client `owner` made that is still there (`GetClient` reuses it).
    public func first(ownedBy owner: String) -> Client? { byOwner[owner]?.first.flatMap { self[$0] } }

    /// Adds the client `make` makes with the next number, owned by the connection `owner` of user `uid`, unless a
    /// limit is reached.
    public mutating func add(owner: String, uid: UInt32, _ make: (UInt32) -> Client) -> Result<
        Client, ShareLimitReached
    > {
        let owned = byOwner[owner]?.count ?? 0
        guard owned < limits.perConnection else { return .failure(.connection(held: owned)) }
        let usersClients = byUser[uid] ?? 0
        guard usersClients < limits.perUser else { return .failure(.user(uid, held: usersClients)) }
        guard clients.count < limits.total else { return .failure(.total(held: clients.count)) }
        lastNumber += 1
        let client = make(lastNumber)
        clients[lastNumber] = (client, owner, uid)
        byOwner[owner, default: []].append(lastNumber)
        byUser[uid] = usersClients + 1
        return .success(client)
    }

    /// Removes the client numbered `number`, returning it.
    public mutating func remove(_ number: UInt32) -> Client? {
        guard let entry = forget(number) else { return nil }
        // In place: a copy of the list would cost all of the owner's clients.
        if let index = Self.position(of: number, in: byOwner[entry.owner] ?? []) {
            byOwner[entry.owner]?.remove(at: index)
            if byOwner[entry.owner]?.isEmpty == true {
                byOwner[entry.owner] = nil
                byOwner.releaseUnusedCapacity()
            }
        }
        return entry.client
    }

    /// Removes every client of the connection `owner`, returning them in the order they were made.
    public mutating func removeAll(ownedBy owner: String) -> [Client] {
        defer { byOwner.releaseUnusedCapacity() }
        return (byOwner.removeValue(forKey: owner) ?? []).compactMap { forget($0)?.client }
    }

    /// Drops the client numbered `number` from everything but its owner's list.
    private mutating func forget(_ number: UInt32) -> (client: Client, owner: String, uid: UInt32)? {
        guard let entry = clients.removeValue(forKey: number) else { return nil }
        let count = byUser[entry.uid] ?? 1
        byUser[entry.uid] = count > 1 ? count - 1 : nil
        clients.releaseUnusedCapacity()
        byUser.releaseUnusedCapacity()
        return entry
    }

    /// Where `number` is in `owned`, which is sorted, as numbers only grow.
    private static func position(of number: UInt32, in owned: [UInt32]) -> Int? {
        var low = 0
        var high = owned.count
        while low < high {
            let middle = (low + high) / 2
            if owned[middle] < number { low = middle + 1 } else { high = middle }
        }
        return low < owned.count && owned[low] == number ? low : nil
    }
}

extension ClientRegistry: Sendable where Client: Sendable {}
