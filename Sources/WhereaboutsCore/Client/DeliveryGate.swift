/// Whether a new fix goes out to the clients now or waits for the bus to take what was already sent.
///
/// When the bus reads the daemon's messages slower than fixes make them (thousands of clients on a loaded
/// machine, or a stalled dbus-daemon), libdbus would queue every update in memory without bound. While more than
/// ``limit`` bytes wait to be written, a fix is held instead, only the newest (a client wants where the device is
/// now, not where it was a moment ago), and it goes out once the queue has fallen to ``resumeBelow``. Nothing is
/// lost but the fixes a newer one replaced while the bus was behind.
public struct DeliveryGate: Sendable {
    /// The queued bytes above which fixes are held.
    public let limit: Int
    /// The queued bytes at or below which a held fix goes out.
    public var resumeBelow: Int { limit / 2 }
    /// The fix waiting for the bus, if any.
    public private(set) var held: Fix?
    /// Fixes replaced by a newer one while held, since the gate last opened.
    public private(set) var replaced = 0

    /// A gate that holds fixes while more than `limit` bytes wait to be written.
    public init(limit: Int) { self.limit = limit }

    /// A new fix, with `queued` bytes waiting to be written: the fix to deliver now, or nil when it is held.
    public mutating func offer(_ fix: Fix, queued: Int) -> Fix? {
        if held == nil, queued <= limit { return fix }
        if held != nil { replaced += 1 }
        held = fix
        return nil
    }

    /// The queue has `queued` bytes now: the held fix to deliver, once it has fallen far enough.
    public mutating func drained(queued: Int) -> Fix? {
        guard let fix = held, queued <= resumeBelow else { return nil }
        held = nil
        replaced = 0
        return fix
    }
}
