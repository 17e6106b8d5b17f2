import CDBus
import Loop

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// A C pointer handed between the loop's callbacks; it is only ever used on the loop thread.
struct LoopPointer: @unchecked Sendable {
    let pointer: OpaquePointer
}

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

    private var objects: [ObjectPath: any ExportedObject] = [:]
    /// The connection each object is shown to, for objects shown to one connection only.
    private var owners: [ObjectPath: String] = [:]
    /// Sets of objects served below a path, and the connection each set is shown to, if only one.
    private var subtrees: [ObjectPath: (subtree: any ExportedSubtree, owner: String?)] = [:]
    /// For each node on the way to an exported object, the child nodes that lead to objects, and whose.
    private var nodes: [String: ChildNodes] = [:]
    private var signalHandlers: [UInt64: (match: SignalMatch, handler: @BusActor (Message) -> Void)] = [:]
    private var nextHandlerID: UInt64 = 1
    private var closed = false
    /// Method calls read and not yet handled, served one caller at a time in turn (``serveCalls()``).
    private var turns = CallTurns<Message>()
    private var servingScheduled = false
    /// The calls handled before the loop reads the bus again.
    private static let callsPerServing = 128
    /// The calls kept waiting, of all callers, beyond which the rest is left in the socket for the bus to hold.
    private static let maximumWaitingCalls = 65_536

    /// Called once when the connection to the bus is lost.
    public var onDisconnect: (@BusActor () -> Void)?
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

    // MARK: Sending and calling

    /// Queues `message` for sending; it is written as soon as the socket allows.
    public func send(_ message: Message) {
        guard !closed else { return }
        dbus_connection_send(raw, message.raw, nil)
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
    private func send(_ message: Message, replyWithin timeout: Duration) throws(DBusError) -> OpaquePointer {
        guard !closed else { throw DBusError(name: DBusError.Name.disconnected, message: "connection closed") }
        var pending: OpaquePointer? = nil
        let milliseconds = Int32(
            clamping: max(1, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        )
        guard dbus_connection_send_with_reply(raw, message.raw, &pending, milliseconds) != 0, let pending else {
            throw DBusError(name: DBusError.Name.disconnected, message: "not connected to the bus")
        }
        return pending
    }

    /// Waits, without blocking the loop, for the reply `pending` stands for, and lets go of it.
    private func reply(to pending: OpaquePointer) async -> Result<Message, DBusError> {
        let result: Result<Message, DBusError> = await withCheckedContinuation { continuation in
            let box = Unmanaged.passRetained(PendingReply(continuation)).toOpaque()
            let armed = dbus_pending_call_set_notify(
                pending,
                { pending, context in
                    let box = Unmanaged<PendingReply>.fromOpaque(context!).takeUnretainedValue()
                    box.complete(with: pending!)
                }, box, { context in Unmanaged<PendingReply>.fromOpaque(context!).release() })
            if armed == 0 {
                Unmanaged<PendingReply>.fromOpaque(box).release()
                continuation.resume(returning: .failure(.failed("out of memory")))
            } else if dbus_pending_call_get_completed(pending) != 0 {
                Unmanaged<PendingReply>.fromOpaque(box).takeUnretainedValue().complete(with: pending)
            }
        }
        dbus_pending_call_unref(pending)
        return result
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

    // MARK: Bus daemon requests

    /// The reply to `RequestName`.
    public enum RequestNameReply: UInt32, Sendable {
        case primaryOwner = 1
        case inQueue = 2
        case exists = 3
        case alreadyOwner = 4
    }

    /// Asks the bus for the well-known `name`, without queueing or replacement.
    public func requestName(_ name: String) async throws(DBusError) -> RequestNameReply {
        let reply = try await callBus("RequestName", [.string(name), .uint32(UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE))])
        guard let code = reply.first?.uint32, let answer = RequestNameReply(rawValue: code) else {
            throw .failed("unexpected RequestName reply")
        }
        return answer
    }

    /// The Unix user id, process id and security label of the connection that owns `name`, from
    /// `GetConnectionCredentials`.
    public func credentials(of name: String) async throws(DBusError) -> PeerCredentialsReply {
        let reply = try await callBus("GetConnectionCredentials", [.string(name)])
        guard let entries = reply.first?.stringKeyedEntries, let uid = entries["UnixUserID"]?.uint32 else {
            throw .failed("the bus gave no credentials for \(name)")
        }
        var label: [UInt8] = []
        if case .array("y", let bytes)? = entries["LinuxSecurityLabel"] { label = bytes.compactMap(\.byte) }
        return PeerCredentialsReply(uid: uid, pid: entries["ProcessID"]?.uint32, securityLabel: label)
    }

    private func callBus(_ member: String, _ arguments: [DBusValue]) async throws(DBusError) -> [DBusValue] {
        try await call(try busCall(member, arguments)).arguments()
    }

    /// A call of `member` of the bus itself (`org.freedesktop.DBus`).
    private func busCall(_ member: String, _ arguments: [DBusValue]) throws(DBusError) -> Message {
        try Message.methodCall(
            destination: "org.freedesktop.DBus", path: ObjectPath(trusted: "/org/freedesktop/DBus"),
            interface: "org.freedesktop.DBus", member: member, arguments: arguments)
    }

    // MARK: Signals

    /// Runs `handler` for every signal that `match` selects, after asking the bus to route such signals here.
    public func subscribe(_ match: SignalMatch, handler: @escaping @BusActor (Message) -> Void) async throws(DBusError)
        -> SignalSubscription
    {
        try await subscribe(match, handler: handler, whileRunning: {}).0
    }

    /// Like ``subscribe(_:handler:)``, and runs `next` meanwhile: the match rule is sent first, so the bus applies it
    /// before anything `next` sends, but its answer is awaited only once `next` is done, which saves a round trip
    /// (at startup: the rule that follows peers leaving, then `RequestName`).
    public func subscribe<Result>(
        _ match: SignalMatch, handler: @escaping @BusActor (Message) -> Void,
        whileRunning next: () async throws(DBusError) -> Result
    ) async throws(DBusError) -> (SignalSubscription, Result) {
        let id = nextHandlerID
        nextHandlerID += 1
        signalHandlers[id] = (match, handler)
        let added: Swift.Result<Message, DBusError>
        let result: Swift.Result<Result, DBusError>
        do {
            let pending = try send(try busCall("AddMatch", [.string(match.rule)]), replyWithin: .seconds(25))
            do {
                result = .success(try await next())
            } catch {
                result = .failure(error)
            }
            added = await reply(to: pending)
        } catch {
            signalHandlers[id] = nil
            throw error
        }
        do {
            _ = try added.get()
            return (SignalSubscription(id: id), try result.get())
        } catch {
            signalHandlers[id] = nil
            throw error
        }
    }

    /// Stops a subscription and removes its match rule from the bus.
    public func unsubscribe(_ subscription: SignalSubscription) {
        guard let entry = signalHandlers.removeValue(forKey: subscription.id), !closed else { return }
        if let message = try? busCall("RemoveMatch", [.string(entry.match.rule)]) {
            dbus_message_set_no_reply(message.raw, 1)
            send(message)
        }
    }

    /// Emits a signal from `path`, to `destination` alone when it is given.
    public func emitSignal(
        path: ObjectPath, interface: String, member: String, arguments: [DBusValue], destination: String? = nil
    ) {
        guard
            let message = try? Message.signal(
                path: path, interface: interface, member: member, arguments: arguments, destination: destination)
        else { return }
        send(message)
    }

    /// Emits `org.freedesktop.DBus.Properties.PropertiesChanged` for `interface` on `path`.
    public func emitPropertiesChanged(
        path: ObjectPath, interface: String, changed: [String: DBusValue], destination: String? = nil
    ) {
        emitSignal(
            path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            arguments: [.string(interface), .vardict(changed), .strings([])], destination: destination)
    }

    // MARK: Exported objects

    /// Serves `object` at `path`, replacing any object there. With `owner` (a unique bus name), introspection
    /// shows the object, and the nodes on the way to it, to that connection alone.
    public func export(_ object: any ExportedObject, at path: ObjectPath, visibleTo owner: String? = nil) {
        if objects[path] != nil { unexport(path) }
        objects[path] = object
        if let owner { owners[path] = owner }
        index(path, owner: owner)
    }

    /// Stops serving the object at `path`.
    public func unexport(_ path: ObjectPath) {
        guard objects.removeValue(forKey: path) != nil else { return }
        unindex(path, owner: owners.removeValue(forKey: path))
    }

    /// Serves the objects of `subtree` at the nodes directly below `path`; with `owner`, introspection shows them,
    /// and the nodes on the way to them, to that connection alone. An object exported at the same path comes first.
    public func exportSubtree(_ subtree: any ExportedSubtree, at path: ObjectPath, visibleTo owner: String? = nil) {
        unexportSubtree(at: path)
        subtrees[path] = (subtree, owner)
        index(path, owner: owner)
    }

    /// Stops serving the objects below `path`.
    public func unexportSubtree(at path: ObjectPath) {
        guard let entry = subtrees.removeValue(forKey: path) else { return }
        unindex(path, owner: entry.owner)
    }

    private func index(_ path: ObjectPath, owner: String?) {
        var below = path.rawValue[...]
        while let (node, child) = Self.parentAndChild(of: below) {
            let wasEmpty = nodes[node]?.isEmpty(for: owner) ?? true
            nodes[node, default: ChildNodes()].add(child, owner: owner)
            // A node counts once in its parent for as long as it has anything below it, so only the nodes that
            // gain their first entry are walked up from: an object beside others touches one node.
            guard wasEmpty else { return }
            below = node[...]
        }
    }

    private func unindex(_ path: ObjectPath, owner: String?) {
        var below = path.rawValue[...]
        while let (node, child) = Self.parentAndChild(of: below) {
            // In place: a copy of a node with thousands of children would make every removal cost them all.
            guard nodes[node]?.remove(child, owner: owner) == true else { return }
            let nowEmpty = nodes[node]?.isEmpty(for: owner) ?? true
            if nodes[node]?.isEmpty == true { nodes[node] = nil }
            guard nowEmpty else { return }
            below = node[...]
        }
    }

    /// The node above `path` and the name of `path` in it; nil for the root.
    private static func parentAndChild(of path: Substring) -> (node: String, child: Substring)? {
        guard path.utf8.count > 1, let slash = path.lastIndex(of: "/") else { return nil }
        let node = slash == path.startIndex ? "/" : String(path[..<slash])
        return (node, path[path.index(after: slash)...])
    }

    /// The object served at `path`, exported there or by a subtree above it.
    public func object(at path: ObjectPath) -> (any ExportedObject)? { served(at: path)?.object }

    /// The object at `path` and the connection it is shown to, if only one.
    private func served(at path: ObjectPath) -> (object: any ExportedObject, owner: String?)? {
        if let object = objects[path] { return (object, owners[path]) }
        guard !subtrees.isEmpty, let (node, child) = Self.parentAndChild(of: path.rawValue[...]),
            let entry = subtrees[ObjectPath(trusted: node)], let object = entry.subtree.child(named: child)
        else { return nil }
        return (object, entry.owner)
    }

    /// The names of the nodes directly below `path` that lead to objects `sender` may see (with `view`), in numeric
    /// order where they are numbers; for ``IntrospectionView/own`` the work is in what `sender` may see, not in what
    /// is exported.
    func childNodes(of path: ObjectPath, visibleTo sender: String, view: IntrospectionView = .own) -> [String] {
        var names: Set<Substring> = []
        if let children = nodes[path.rawValue] {
            names.formUnion(children.everyone.keys)
            switch view {
            case .own: if let mine = children.owned[sender] { names.formUnion(mine.keys) }
            case .everything: for owned in children.owned.values { names.formUnion(owned.keys) }
            }
        }
        if let entry = subtrees[path], view == .everything || entry.owner == nil || entry.owner == sender {
            names.formUnion(entry.subtree.childNames.map { $0[...] })
        }
        return names.map(String.init).sorted { a, b in
            if let x = UInt64(a), let y = UInt64(b) { return x < y }
            return a < b
        }
    }

    // MARK: Dispatch

    fileprivate func handleFiltered(_ message: Message) -> Bool {
        guard message.kind == .signal else { return false }
        if message.interface == "org.freedesktop.DBus.Local" && message.member == "Disconnected" {
            let handler = onDisconnect
            onDisconnect = nil
            handler?()
            return true
        }
        // No signal handled here takes file descriptors; decoding one would duplicate them into the process.
        guard !message.carriesFileDescriptors else { return false }
        for (_, entry) in signalHandlers where entry.match.matches(message) { entry.handler(message) }
        return false
    }

    /// Forgets the waiting calls of `name`, a peer the bus says has left (`NameOwnerChanged`): its calls came
    /// before that signal, and nothing can answer them now.
    public func forgetCalls(from name: String) { turns.dropAll(from: name) }

    /// Called when a call of `caller` was refused past a limit (`LimitsExceeded`): for the next second its calls
    /// are handled one per 10 ms at most, so that a caller resending each refused call at once is answered at that
    /// pace instead of at the rate the service and the bus can refuse it.
    func noteRefusedPastLimit(_ caller: String) {
        let now = monotonicNanoseconds()
        turns.slow(caller, interval: 10_000_000, until: now + 1_000_000_000, now: now)
    }

    /// Queues a method call for its caller's turn; one past its caller's bound is refused at once, unhandled.
    fileprivate func enqueueCall(_ message: Message) {
        guard turns.append(message, from: message.sender ?? "") else {
            let refusal = DBusError.limitsExceeded(
                "more than \(CallTurns<Message>.maximumPerCaller) calls of this connection wait to be handled")
            if !message.noReplyExpected, let reply = message.errorReply(refusal) { send(reply) }
            noteRefusedPastLimit(message.sender ?? "")
            return
        }
    }

    /// Handles waiting calls, the callers taking turns, at most ``callsPerServing`` before the loop looks at the
    /// bus again; the rest is served on the next turn of the loop, once what the bus sent meanwhile is read.
    private func serveCalls() {
        var served = 0
        while served < Self.callsPerServing, !closed, let message = turns.next(now: monotonicNanoseconds()) {
            dispatchMethodCall(message)
            served += 1
        }
        guard !turns.isEmpty, !closed, !servingScheduled else { return }
        servingScheduled = true
        // A timer, not queued work: the loop polls its descriptors before it runs the timer. When only slowed
        // callers wait, at the first one's time.
        let delay: Duration =
            served > 0 ? .zero : .nanoseconds(max(0, (turns.nextDue ?? 0) - monotonicNanoseconds()))
        _ = EventLoop.main.schedule(after: delay) { [weak self] in
            guard let self else { return }
            self.servingScheduled = false
            self.readAvailable()
            self.drain()
        }
    }

    /// Reads all the bus has sent so far (libdbus reads a few kilobytes at a time), so that a caller whose call
    /// is behind another's flood in the socket gets its turn without waiting for the flood to be handled.
    private func readAvailable() {
        var fd: Int32 = -1
        guard !closed, dbus_connection_get_socket(raw, &fd) != 0 else { return }
        var socket = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        // Bounded in reads too, should libdbus stop taking bytes (its own limit on what it holds) while some wait.
        var reads = 0
        while reads < 4096, turns.count < Self.maximumWaitingCalls, poll(&socket, 1, 0) > 0,
            socket.revents & Int16(POLLIN) != 0
        {
            reads += 1
            guard dbus_connection_read_write(raw, 0) != 0 else { return }
            dispatchRead()
            socket.revents = 0
        }
    }

    fileprivate func dispatchMethodCall(_ message: Message) {
        // No method served here takes file descriptors. Decoding the arguments would duplicate every descriptor
        // a caller attached, and nothing would close them: any peer could exhaust the process's descriptors.
        guard !message.carriesFileDescriptors else {
            if !message.noReplyExpected,
                let reply = message.errorReply(.invalidArgs("File descriptors are not accepted"))
            {
                send(reply)
            }
            return
        }
        let call = MethodCall(message: message, connection: self)
        do {
            switch try route(call) {
            case .values(let values): call.reply(values)
            case .later: break
            }
        } catch {
            call.fail(error)
        }
    }

    private func route(_ call: MethodCall) throws(DBusError) -> Reply {
        guard !call.isOversized else {
            throw .limitsExceeded("the call carries more than \(Message.maximumDecodedValues) values")
        }
        let message = call.message
        let path = message.path ?? .root
        let member = message.member ?? ""
        let interface = message.interface
        if member == "Introspect" && (interface == nil || interface == "org.freedesktop.DBus.Introspectable") {
            guard !message.noReplyExpected else { return .values([]) }
            if let refusal = introspectionGate?(call.sender) { throw refusal }
            guard let viewOf = introspectionView else {
                return .values([.string(introspection(of: path, for: call.sender, view: .own))])
            }
            BusActor.task { [weak self] in
                do throws(DBusError) {
                    let view = try await viewOf(call)
                    guard let self else { return }
                    call.reply([.string(self.introspection(of: path, for: call.sender, view: view))])
                } catch {
                    call.fail(error)
                }
            }
            return .later
        }
        let object = served(at: path)?.object
        guard let object else { throw .unknownMethod("Object does not exist at path “\(path)”") }
        if interface == "org.freedesktop.DBus.Properties" {
            return try PropertiesDispatch.handle(call, member: member, object: object, path: path)
        }
        guard let (owner, method) = Connection.find(member: member, interface: interface, in: object.interfaces)
        else {
            if let interface, !object.interfaces.contains(where: { $0.name == interface }) {
                throw .unknownMethod("No such interface “\(interface)” on object at path \(path)")
            }
            throw .unknownMethod("No such method “\(member)”")
        }
        if let denied = object.checkAccess(sender: call.sender) { throw denied }
        guard message.signature == method.inputSignature else {
            throw .invalidArgs(
                "Type of message, “(\(message.signature))”, does not match expected type “(\(method.inputSignature))”"
            )
        }
        return try object.handle(call, interface: owner.name, method: member)
    }

    /// The introspection document of `path` as `sender` may see it with `view`: with ``IntrospectionView/own``, the
    /// objects everyone may see and its own; another connection's are not there for it.
    private func introspection(of path: ObjectPath, for sender: String, view: IntrospectionView) -> String {
        let served = served(at: path)
        let visible = view == .everything || (served?.owner.map { $0 == sender } ?? true)
        let shown = visible ? served?.object.interfaces ?? [] : []
        return Introspection.document(interfaces: shown, children: childNodes(of: path, visibleTo: sender, view: view))
    }

    private static func find(member: String, interface: String?, in interfaces: [InterfaceDescription])
        -> (InterfaceDescription, MethodDescription)?
    {
        for candidate in interfaces where interface == nil || candidate.name == interface {
            if let method = candidate.method(member) { return (candidate, method) }
        }
        return nil
    }

    // MARK: Loop integration

    private func attachToLoop() {
        let context = Unmanaged.passRetained(self).toOpaque()
        dbus_connection_set_watch_functions(
            raw,
            { watch, _ in Connection.addWatch(watch!) },
            { watch, _ in Connection.removeWatch(watch!) },
            { watch, _ in Connection.toggleWatch(watch!) },
            nil, nil)
        dbus_connection_set_timeout_functions(
            raw,
            { timeout, _ in Connection.addTimeout(timeout!) },
            { timeout, _ in Connection.removeTimeout(timeout!) },
            { timeout, _ in Connection.toggleTimeout(timeout!) },
            nil, nil)
        dbus_connection_set_dispatch_status_function(
            raw,
            { _, status, context in
                guard status == DBUS_DISPATCH_DATA_REMAINS else { return }
                let connection = Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue()
                EventLoop.main.execute { connection.drain() }
            }, context, nil)
        dbus_connection_add_filter(raw, Connection.filterFunction, context, nil)
        var vtable = DBusObjectPathVTable()
        vtable.message_function = { _, message, context in
            let connection = Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue()
            let wrapped = Message(retaining: message!)
            guard wrapped.kind == .methodCall else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            BusActor.assumeIsolated { connection.enqueueCall(wrapped) }
            return DBUS_HANDLER_RESULT_HANDLED
        }
        dbus_connection_register_fallback(raw, "/", &vtable, context)
        EventLoop.main.execute { self.drain() }
    }

    fileprivate static let filterFunction: DBusHandleMessageFunction = { _, message, context in
        let connection = Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue()
        let wrapped = Message(retaining: message!)
        let handled = BusActor.assumeIsolated { connection.handleFiltered(wrapped) }
        return handled ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }

    /// Dispatches every message already read, then serves the waiting calls in turn; a closed connection is left
    /// alone.
    private func drain() {
        dispatchRead()
        serveCalls()
    }

    /// Dispatches every message libdbus has read: signals and replies are handled, method calls queued.
    private func dispatchRead() {
        while !closed && dbus_connection_dispatch(raw) == DBUS_DISPATCH_DATA_REMAINS {}
    }

    private final class WatchBox {
        var id: WatchID?
    }

    private final class TimeoutBox {
        var timer: TimerID?
        /// Set when libdbus removes the timeout; its pointer may be freed and reused after that.
        var removed = false
    }

    private static func events(of watch: OpaquePointer) -> IOEvents {
        guard dbus_watch_get_enabled(watch) != 0 else { return [] }
        let flags = dbus_watch_get_flags(watch)
        var events: IOEvents = []
        if flags & DBUS_WATCH_READABLE.rawValue != 0 { events.insert(.readable) }
        if flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events.insert(.writable) }
        return events
    }

    private static func addWatch(_ watch: OpaquePointer) -> dbus_bool_t {
        let box = WatchBox()
        let handle = LoopPointer(pointer: watch)
        box.id = EventLoop.main.addWatch(fd: dbus_watch_get_unix_fd(watch), events: events(of: watch)) { ready in
            var flags: UInt32 = 0
            if ready.contains(.readable) { flags |= DBUS_WATCH_READABLE.rawValue }
            if ready.contains(.writable) { flags |= DBUS_WATCH_WRITABLE.rawValue }
            if ready.contains(.error) { flags |= DBUS_WATCH_ERROR.rawValue }
            if ready.contains(.hangup) { flags |= DBUS_WATCH_HANGUP.rawValue }
            dbus_watch_handle(handle.pointer, flags)
        }
        dbus_watch_set_data(watch, Unmanaged.passRetained(box).toOpaque()) { data in
            Unmanaged<WatchBox>.fromOpaque(data!).release()
        }
        return 1
    }

    private static func removeWatch(_ watch: OpaquePointer) {
        guard let data = dbus_watch_get_data(watch) else { return }
        let box = Unmanaged<WatchBox>.fromOpaque(data).takeUnretainedValue()
        if let id = box.id { EventLoop.main.removeWatch(id) }
        box.id = nil
    }

    private static func toggleWatch(_ watch: OpaquePointer) {
        guard let data = dbus_watch_get_data(watch) else { return }
        let box = Unmanaged<WatchBox>.fromOpaque(data).takeUnretainedValue()
        if let id = box.id { EventLoop.main.updateWatch(id, events: events(of: watch)) }
    }

    private static func addTimeout(_ timeout: OpaquePointer) -> dbus_bool_t {
        let box = TimeoutBox()
        dbus_timeout_set_data(timeout, Unmanaged.passRetained(box).toOpaque()) { data in
            Unmanaged<TimeoutBox>.fromOpaque(data!).release()
        }
        arm(timeout, box)
        return 1
    }

    private static func arm(_ timeout: OpaquePointer, _ box: TimeoutBox) {
        if let timer = box.timer { EventLoop.main.cancel(timer) }
        box.timer = nil
        guard dbus_timeout_get_enabled(timeout) != 0 else { return }
        let handle = LoopPointer(pointer: timeout)
        box.timer = EventLoop.main.schedule(after: .milliseconds(Int(dbus_timeout_get_interval(timeout)))) {
            box.timer = nil
            dbus_timeout_handle(handle.pointer)
            if box.timer == nil, !box.removed { arm(handle.pointer, box) }
        }
    }

    private static func removeTimeout(_ timeout: OpaquePointer) {
        guard let data = dbus_timeout_get_data(timeout) else { return }
        let box = Unmanaged<TimeoutBox>.fromOpaque(data).takeUnretainedValue()
        if let timer = box.timer { EventLoop.main.cancel(timer) }
        box.timer = nil
        box.removed = true
    }

    private static func toggleTimeout(_ timeout: OpaquePointer) {
        guard let data = dbus_timeout_get_data(timeout) else { return }
        arm(timeout, Unmanaged<TimeoutBox>.fromOpaque(data).takeUnretainedValue())
    }
}

/// The child nodes of one node that lead to exported objects: how many objects lie below each, those everyone
/// may see and those of each owner apart, so that listing what one connection may see costs only that.
struct ChildNodes {
    /// For each child, the objects at it and whether anything is below it, for everyone and for each owner.
    var everyone: [Substring: Int] = [:]
    var owned: [String: [Substring: Int]] = [:]

    var isEmpty: Bool { everyone.isEmpty && owned.isEmpty }

    /// True when nothing here is for `owner` (everyone, when nil).
    func isEmpty(for owner: String?) -> Bool {
        guard let owner else { return everyone.isEmpty }
        return owned[owner] == nil
    }

    mutating func add(_ child: Substring, owner: String?) {
        if let owner {
            owned[owner, default: [:]][child, default: 0] += 1
        } else {
            everyone[child, default: 0] += 1
        }
    }

    /// Counts one of `child`'s entries off; false when there was none.
    mutating func remove(_ child: Substring, owner: String?) -> Bool {
        if let owner {
            guard owned[owner] != nil, ChildNodes.decrement(&owned[owner]!, child) else { return false }
            if owned[owner]!.isEmpty { owned[owner] = nil }
            return true
        }
        return ChildNodes.decrement(&everyone, child)
    }

    private static func decrement(_ counts: inout [Substring: Int], _ child: Substring) -> Bool {
        guard let count = counts[child] else { return false }
        counts[child] = count > 1 ? count - 1 : nil
        return true
    }
}

/// What an `Introspect` caller is shown (``Connection/introspectionView``).
public enum IntrospectionView: Sendable, Equatable {
    /// The objects everyone may see, and those shown to the caller's connection alone.
    case own
    /// Every object, whichever connection it is shown to.
    case everything
}

/// A token for ``Connection/unsubscribe(_:)``.
public struct SignalSubscription: Hashable, Sendable {
    let id: UInt64
}

/// Which signals a subscription wants; each field that is set must match.
public struct SignalMatch: Sendable, Hashable {
    public var sender: String?
    public var path: ObjectPath?
    public var interface: String?
    public var member: String?
    /// Extra `argN='value'` conditions, by argument index.
    public var stringArguments: [Int: String]

    public init(
        sender: String? = nil, path: ObjectPath? = nil, interface: String? = nil, member: String? = nil,
        stringArguments: [Int: String] = [:]
    ) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.stringArguments = stringArguments
    }

    /// The match rule the bus applies.
    public var rule: String {
        var parts = ["type='signal'"]
        if let sender { parts.append("sender='\(sender)'") }
        if let path { parts.append("path='\(path)'") }
        if let interface { parts.append("interface='\(interface)'") }
        if let member { parts.append("member='\(member)'") }
        for (index, value) in stringArguments.sorted(by: { $0.key < $1.key }) { parts.append("arg\(index)='\(value)'") }
        return parts.joined(separator: ",")
    }

    func matches(_ message: Message) -> Bool {
        if let sender, sender.hasPrefix(":") || sender == "org.freedesktop.DBus", message.sender != sender {
            return false
        }
        if let path, message.path != path { return false }
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        if !stringArguments.isEmpty {
            let arguments = message.arguments()
            for (index, value) in stringArguments {
                guard index < arguments.count, arguments[index].string == value else { return false }
            }
        }
        return true
    }
}

/// Completes one outgoing call's continuation from libdbus's pending-call notification.
private final class PendingReply: @unchecked Sendable {
    private var continuation: CheckedContinuation<Result<Message, DBusError>, Never>?

    init(_ continuation: CheckedContinuation<Result<Message, DBusError>, Never>) { self.continuation = continuation }

    func complete(with pending: OpaquePointer) {
        guard let continuation else { return }
        self.continuation = nil
        guard let raw = dbus_pending_call_steal_reply(pending) else {
            continuation.resume(returning: .failure(DBusError(name: DBusError.Name.noReply, message: "no reply")))
            return
        }
        let reply = Message(owning: raw)
        if let error = reply.error {
            continuation.resume(returning: .failure(error))
        } else {
            continuation.resume(returning: .success(reply))
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
