/// The most of something one connection may have, the connections of one Unix user together, and everyone in all:
/// the calls the service holds unanswered (``HeldCallLedger``) and its clients (``ClientRegistry``).
public struct ShareLimits: Sendable, Equatable {
    public var perConnection: Int
    public var perUser: Int
    public var total: Int

    public init(perConnection: Int, perUser: Int, total: Int) {
        self.perConnection = perConnection
        self.perUser = perUser
        self.total = total
    }
}

/// Which of the ``ShareLimits`` one more would pass, and how many were held against it.
public enum ShareLimitReached: Error, Sendable, Equatable {
    case connection(held: Int)
    case user(UInt32, held: Int)
    case total(held: Int)
}
