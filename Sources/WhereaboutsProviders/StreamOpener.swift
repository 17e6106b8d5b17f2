import Loop

#if canImport(Glibc)
    import Glibc
#endif

/// Opens the connections a ``ReconnectingLineStream`` reads: a socket, a device, a connection to gpsd.
@BusActor
public protocol StreamOpener {
    /// Starts opening a connection and calls `completion` once, on the bus thread, with the outcome: before
    /// returning when opening cannot block, later when it can (the blocking part then runs on a thread of its
    /// own). A stream that has stopped or moved on by then closes what it is handed.
    func open(_ completion: @escaping @BusActor @Sendable (StreamOpening) -> Void)
}

/// What an attempt to open a connection came to.
public enum StreamOpening {
    /// The connection is open and can be read.
    case opened(StreamConnection)
    /// A non-blocking `connect` is under way: the stream waits for the socket to become writable and reads its
    /// `SO_ERROR` to learn whether it connected.
    case connecting(StreamConnection)
    /// Opening failed, for the reason given (a line for the log).
    case failed(String)
}

/// A connection a ``ReconnectingLineStream`` reads: a descriptor in non-blocking mode, and what closes it.
public struct StreamConnection {
    /// The descriptor read, in non-blocking mode.
    public let descriptor: Int32
    private let closer: @BusActor () -> Void

    /// A connection that `close` closes; it must close `descriptor` too.
    public init(descriptor: Int32, close: @escaping @BusActor () -> Void) {
        self.descriptor = descriptor
        self.closer = close
    }

    /// A connection that is its descriptor alone, closed with `close(2)`.
    public init(descriptor: Int32) {
        self.init(descriptor: descriptor) { _ = Glibc.close(descriptor) }
    }

    /// Closes the connection; called once, by whoever holds it last.
    @BusActor
    public func close() { closer() }
}
