import CDBus

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

extension Connection {
    /// The bytes of the messages libdbus holds for the bus and has not written yet (`dbus_connection_get_outgoing_size`):
    /// it grows when the bus reads the connection slower than the process sends.
    public var outgoingBytes: Int { Int(dbus_connection_get_outgoing_size(raw)) }

    /// The bytes waiting for the bus (``outgoingBytes``) above which it is behind: no further call is served, and
    /// the service holds its fixes (`FixBackpressure`), until it has taken all but ``backlogResumesAtOrBelow``.
    ///
    /// The bus reads a connection a few kilobytes per turn of its own loop, so callers on many connections bring a
    /// service calls far faster than the bus takes their answers; the socket's buffer (``socketBacklogLimit``) keeps
    /// the bus busy meanwhile. Without this bound every answer waited in libdbus's queue: one user's 250
    /// connections, each with 128 `Introspect` calls in flight, kept 100 MB there, and another user's call waited
    /// seconds behind them.
    public static let backlogLimit = 64 << 10
    /// The bytes waiting for the bus at or below which it has caught up (``backlogLimit``).
    static let backlogResumesAtOrBelow = backlogLimit / 2

    /// What a serving connection lets the kernel keep of what it wrote and the bus has not read yet
    /// (``boundSocketBacklog()``).
    public static let socketBacklogLimit: Int32 = 32 << 10

    /// Makes the kernel keep about ``socketBacklogLimit`` of what the connection wrote and the bus has not read
    /// (`SO_SNDBUF`, which the kernel doubles for its bookkeeping); the rest waits in libdbus's queue, where
    /// ``backlogLimit`` sees it. At the kernel's default, some 200 KiB lie in the socket beyond that bound, in the
    /// order they were written: every later message, a reply to another user or the service's own question to the
    /// bus about a new caller, waits behind all of it while the bus reads the connection a few kilobytes at a time.
    /// For a service, whose answers may go out faster than the bus takes them.
    public func boundSocketBacklog() throws(DBusError) {
        var bytes = Connection.socketBacklogLimit
        guard let socket = socketDescriptor else { throw .failed("the connection is closed or has no socket") }
        guard setsockopt(socket, SOL_SOCKET, SO_SNDBUF, &bytes, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw .failed("cannot bound the socket's send buffer: \(String(cString: strerror(errno)))")
        }
    }

    /// Has ``onBusCaughtUp`` called once the bus has taken all but ``backlogResumesAtOrBelow`` of what waits for it
    /// (on the next turn of the loop if it has already), for what the service holds while the bus is behind.
    public func holdUntilBusCatchesUp() {
        heldForBus = true
        resumeIfBusCaughtUp()
    }
}
