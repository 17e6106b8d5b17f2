import CDBus

extension Connection {
    /// The bytes of the messages libdbus holds for the bus and has not written yet (`dbus_connection_get_outgoing_size`):
    /// it grows when the bus reads the connection slower than the process sends.
    public var outgoingBytes: Int { Int(dbus_connection_get_outgoing_size(raw)) }

    /// The bytes waiting for the bus (``outgoingBytes``) above which it is behind: no further call is served, and
    /// the service holds its fixes (`FixBackpressure`), until it has taken all but ``backlogResumesAtOrBelow``.
    ///
    /// The bus reads a connection a few kilobytes per turn of its own loop, so callers on many connections bring a
    /// service calls far faster than the bus takes their answers; the kernel's socket buffer (some 200 KiB) keeps
    /// the bus busy meanwhile. Without this bound every answer waited in libdbus's queue: one user's 250
    /// connections, each with 128 `Introspect` calls in flight, kept 100 MB there, and another user's call waited
    /// seconds behind them.
    public static let backlogLimit = 64 << 10
    /// The bytes waiting for the bus at or below which it has caught up (``backlogLimit``).
    static let backlogResumesAtOrBelow = backlogLimit / 2

    /// Has ``onBusCaughtUp`` called once the bus has taken all but ``backlogResumesAtOrBelow`` of what waits for it
    /// (on the next turn of the loop if it has already), for what the service holds while the bus is behind.
    public func holdUntilBusCatchesUp() {
        heldForBus = true
        resumeIfBusCaughtUp()
    }
}
