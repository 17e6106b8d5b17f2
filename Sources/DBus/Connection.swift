import CDBus
import Loop

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// A private connection to a message bus, driven by ``EventLoop/main``.
///
/// Everything about the connection happens on the loop thread (``BusActor``): reading, dispatching to exported
/// objects and signal handlers, sending, and completing outgoing calls. Nothing here blocks the loop except the
/// `Hello` exchange in ``open(address:)``.
@BusActor
public final class Connection {
    let raw: OpaquePointer
    /// The unique name the bus gave this connection, such as `:1.42`.
    public let uniqueName: String

    var objects: [ObjectPath: any ExportedObject] = [:]
    /// The connection each object is shown to, for objects shown to one connection only.
    var owners: [ObjectPath: String] = [:]
    /// The subtrees of objects found when asked, by the path they are served below.
    var subtrees: [ObjectPath: any ExportedSubtree] = [:]
    /// For each node on the way to an exported object, the child nodes that lead to objects, and whose.
    var nodes: [String: ChildNodes] = [:]
    var signalHandlers: [UInt64: (match: SignalMatch, handler: @BusActor (Message) -> Void)] = [:]
    var nextHandlerID: UInt64 = 1
    private(set) var closed = false
    /// Method calls read and not yet handled, and answers deferred while the bus was behind, served one caller at a
    /// time in turn (``serveCalls()``).
    var turns = CallTurns<CallerWork>()
    var servingScheduled = false
    /// True while calls, or what the service holds (``holdUntilBusCatchesUp()``), wait for the bus to take what was
    /// already sent (``backlogLimit``).
    var heldForBus = false

    /// Called once when the connection to the bus is lost.
    public var onDisconnect: (@BusActor () -> Void)?
    /// Called when the bus has caught up after calls or the service held something for it (``backlogLimit``,
    /// ``holdUntilBusCatchesUp()``), before the held calls are served: what the service holds goes out first, so
    /// that a flood of calls cannot keep it waiting.
    public var onBusCaughtUp: (@BusActor () -> Void)?
    /// The group whose turns a caller's calls take, asked with its unique name as each call or deferred answer is
    /// queued and by ``regroupCalls(of:)``: groups take turns, and the callers of a group take its turns
    /// (``CallTurns``). Without it each caller is a group of its own.
    /// The service groups the connections of one user, so that a user's many connections cannot keep another's
    /// calls waiting.
    public var turnGroup: (@BusActor (String) -> String)?
    /// Asked before an `Introspect` call is answered, with the caller's unique name; an error refuses the call.
    /// An `Introspect` that wants no reply is dropped before it is asked about: it can change nothing.
    public var introspectionGate: (@BusActor (String) -> DBusError?)?
    /// Asked, once the gate let an `Introspect` through, what its caller may see; the call is answered when it
    /// tells. Without it every caller sees ``IntrospectionView/own``.
    public var introspectionView: (@BusActor (MethodCall) async throws(DBusError) -> IntrospectionView)?

    /// Connects to the bus at `address`, authenticates and registers (the blocking `Hello` exchange).
    public static func open(address: String) throws(DBusError) -> Connection {
        dbus_threads_init_default()
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let raw = dbus_connection_open_private(address, &error) else {
            throw DBusError(from: error, fallback: "cannot connect to \(address)")
        }
        dbus_connection_set_exit_on_disconnect(raw, 0)
        guard dbus_bus_register(raw, &error) != 0, let name = dbus_bus_get_unique_name(raw) else {
            let failure = DBusError(from: error, fallback: "cannot register on the bus at \(address)")
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            throw failure
        }
        let connection = Connection(raw: raw, uniqueName: String(cString: name))
        connection.attachToLoop()
        return connection
    }

    /// The address of the system bus: `DBUS_SYSTEM_BUS_ADDRESS` when set, else the standard socket.
    public nonisolated static var systemBusAddress: String {
        if let value = getenv("DBUS_SYSTEM_BUS_ADDRESS"), value.pointee != 0 { return String(cString: value) }
        return "unix:path=/var/run/dbus/system_bus_socket"
    }

    private init(raw: OpaquePointer, uniqueName: String) {
        self.raw = raw
        self.uniqueName = uniqueName
    }

    /// Sends every queued message and closes the connection.
    public func close() {
        guard !closed else { return }
        closed = true
        for case .answer(let call, _) in turns.dropAll() { call.abandon() }
        dbus_connection_flush(raw)
        dbus_connection_close(raw)
        objects.removeAll()
        owners.removeAll()
        nodes.removeAll()
        subtrees.removeAll()
        signalHandlers.removeAll()
        dbus_connection_set_watch_functions(raw, nil, nil, nil, nil, nil)
        dbus_connection_set_timeout_functions(raw, nil, nil, nil, nil, nil)
        dbus_connection_set_dispatch_status_function(raw, nil, nil, nil)
        dbus_connection_unregister_object_path(raw, "/")
        dbus_connection_remove_filter(raw, Connection.filterFunction, Unmanaged.passUnretained(self).toOpaque())
        Unmanaged.passUnretained(self).release()
        dbus_connection_unref(raw)
    }

    /// True until the bus connection is lost or closed.
    public var isConnected: Bool { !closed && dbus_connection_get_is_connected(raw) != 0 }

    /// The connection's socket (`dbus_connection_get_socket`); nil once it is closed, or when libdbus has none.
    var socketDescriptor: Int32? {
        var socket: Int32 = -1
        guard !closed, dbus_connection_get_socket(raw, &socket) != 0 else { return nil }
        return socket
    }

    // MARK: Sending and calling

    /// Queues `message` for sending; it is written as soon as the socket allows.
    public func send(_ message: Message) {
        guard !closed else { return }
        dbus_connection_send(raw, message.raw, nil)
        resumeIfBusCaughtUp()
    }

    /// Writes everything queued, blocking until done; for use just before exiting.
    public func flush() {
        guard !closed else { return }
        dbus_connection_flush(raw)
    }

    /// Sends a method call and waits, without blocking the loop, for its reply or error.
    ///
    /// An error reply is thrown as a ``DBusError``; no reply within `timeout` throws
    /// `org.freedesktop.DBus.Error.NoReply`.
    public func call(_ message: Message, timeout: Duration = .seconds(25)) async throws(DBusError) -> Message {
        let pending = try send(message, replyWithin: timeout)
        return try await reply(to: pending).get()
    }

    /// Queues a method call and returns its pending reply, which ``reply(to:)`` waits for.
    func send(_ message: Message, replyWithin timeout: Duration) throws(DBusError) -> OpaquePointer {
        guard !closed else { throw DBusError(name: DBusError.Name.disconnected, message: "connection closed") }
        var pending: OpaquePointer? = nil
        let milliseconds = Int32(
            clamping: max(1, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        )
        guard dbus_connection_send_with_reply(raw, message.raw, &pending, milliseconds) != 0, let pending else {
            throw DBusError(name: DBusError.Name.disconnected, message: "not connected to the bus")
        }
        resumeIfBusCaughtUp()
        return pending
    }

    /// Waits, without blocking the loop, for the reply `pending` stands for, and lets go of it.
    func reply(to pending: OpaquePointer) async -> Result<Message, DBusError> {
        await withCheckedContinuation { continuation in
            whenAnswered(pending) { continuation.resume(returning: $0) }
        }
    }

    /// Sends a method call and hands its reply or error to `completion` on the loop thread; no reply within
    /// `timeout` is `org.freedesktop.DBus.Error.NoReply`. For a caller that waits for many replies at once (a burst
    /// of new connections, each asked for its credentials): each waits as a closure, not as a task with its frames.
    public func call(
        _ message: Message, timeout: Duration = .seconds(25),
        completion: @escaping @BusActor (Result<Message, DBusError>) -> Void
    ) {
        do throws(DBusError) {
            let pending = try send(message, replyWithin: timeout)
            whenAnswered(pending) { result in BusActor.assumeIsolated { completion(result) } }
        } catch {
            completion(.failure(error))
        }
    }

    /// Hands the reply `pending` stands for to `completion` once it is in (at once when it is already), on the loop
    /// thread, and lets go of `pending`.
    private func whenAnswered(
        _ pending: OpaquePointer, _ completion: @escaping @Sendable (Result<Message, DBusError>) -> Void
    ) {
        let box = Unmanaged.passRetained(PendingReply(completion)).toOpaque()
        let armed = dbus_pending_call_set_notify(
            pending,
            { pending, context in
                let box = Unmanaged<PendingReply>.fromOpaque(context!).takeUnretainedValue()
                box.complete(with: pending!)
            }, box, { context in Unmanaged<PendingReply>.fromOpaque(context!).release() })
        if armed == 0 {
            Unmanaged<PendingReply>.fromOpaque(box).release()
            completion(.failure(.failed("out of memory")))
        } else if dbus_pending_call_get_completed(pending) != 0 {
            Unmanaged<PendingReply>.fromOpaque(box).takeUnretainedValue().complete(with: pending)
        }
        dbus_pending_call_unref(pending)
    }

    /// Calls `member` and returns the reply's arguments; `allowsInteractiveAuthorization` lets the service prompt
    /// the user (through polkit) before it answers.
    public func call(
        destination: String, path: ObjectPath, interface: String, member: String, arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25), allowsInteractiveAuthorization: Bool = false
    ) async throws(DBusError) -> [DBusValue] {
        let message = try Message.methodCall(
            destination: destination, path: path, interface: interface, member: member, arguments: arguments)
        message.allowsInteractiveAuthorization = allowsInteractiveAuthorization
        return try await call(message, timeout: timeout).arguments()
    }
}

/// Completes one outgoing call from libdbus's pending-call notification, once.
private final class PendingReply: @unchecked Sendable {
    private var completion: (@Sendable (Result<Message, DBusError>) -> Void)?

    init(_ completion: @escaping @Sendable (Result<Message, DBusError>) -> Void) { self.completion = completion }

    func complete(with pending: OpaquePointer) {
        guard let completion else { return }
        self.completion = nil
        guard let raw = dbus_pending_call_steal_reply(pending) else {
            completion(.failure(DBusError(name: DBusError.Name.noReply, message: "no reply")))
            return
        }
        let reply = Message(owning: raw)
        if let error = reply.error {
            completion(.failure(error))
        } else {
            completion(.success(reply))
        }
    }
}

extension DBusError {
    init(from error: CDBus.DBusError, fallback: String) {
        if dbus_error_is_set([error]) != 0, let name = error.name {
            self.init(name: String(cString: name), message: error.message.map { String(cString: $0) } ?? fallback)
        } else {
            self.init(name: DBusError.Name.failed, message: fallback)
        }
    }
}
