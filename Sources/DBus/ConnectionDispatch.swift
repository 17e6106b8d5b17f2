import CDBus
import Loop

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// What waits for its caller's turn: a method call read from the bus, or the answer to one that the service
/// finished while the bus was behind, which is built and sent when the turn comes (``MethodCall/replyInTurn(_:)``).
enum CallerWork {
    case call(Message)
    case answer(MethodCall, @BusActor () -> Void)
}

/// Handling what the bus sends: signals to their handlers, method calls in their callers' turns to the objects.
extension Connection {
    /// The calls handled before the loop reads the bus again.
    private static let callsPerServing = 128
    /// The calls kept waiting, of all callers, beyond which the rest is left in the socket for the bus to hold.
    private static let maximumWaitingCalls = 65_536

    func handleFiltered(_ message: Message) -> Bool {
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
    /// before that signal, and nothing can answer them now. Its deferred answers are dropped unbuilt, each call
    /// counted as answered (``MethodCall/onAnswered``).
    public func forgetCalls(from name: String) {
        for case .answer(let call, _) in turns.dropAll(from: name) { call.abandon() }
    }

    /// Moves the calls `name` has waiting to the turns of its group as ``turnGroup`` tells it now: for a caller whose
    /// user has just become known, so that the calls it sent before, however many, stop sharing the turns of
    /// connections not known yet with every new connection's first call.
    public func regroupCalls(of name: String) {
        turns.regroup(name, in: turnGroup?(name))
    }

    /// Called when a call of `caller` was refused past a limit (`LimitsExceeded`): for the next second its calls
    /// are handled one per 10 ms at most, so that a caller resending each refused call at once is answered at that
    /// pace instead of at the rate the service and the bus can refuse it.
    func noteRefusedPastLimit(_ caller: String) {
        let now = monotonicNanoseconds()
        turns.slow(caller, interval: 10_000_000, until: now + 1_000_000_000, now: now)
    }

    /// Queues a method call for its caller's turn; one past its caller's bound is refused at once, unhandled.
    func enqueueCall(_ message: Message) {
        let caller = message.sender ?? ""
        guard turns.append(.call(message), from: caller, in: turnGroup?(caller)) else {
            let refusal = DBusError.limitsExceeded(
                "more than \(CallTurns<CallerWork>.maximumPerCaller) calls of this connection wait to be handled")
            if !message.noReplyExpected, let reply = message.errorReply(refusal) { send(reply) }
            noteRefusedPastLimit(caller)
            return
        }
    }

    /// Handles waiting calls, the callers taking turns, at most ``callsPerServing`` before the loop looks at the
    /// bus again; the rest is served on the next turn of the loop, once what the bus sent meanwhile is read.
    func serveCalls() {
        var served = 0
        while served < Self.callsPerServing, !closed, !holdServingIfBusIsBehind(),
            let work = turns.next(now: monotonicNanoseconds())
        {
            switch work {
            case .call(let message): dispatchMethodCall(message)
            case .answer(_, let answer): answer()
            }
            served += 1
        }
        guard !turns.isEmpty, !closed, !servingScheduled, !heldForBus else { return }
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

    /// Runs `answer`, which sends `call`'s reply: now, unless more than ``backlogLimit`` waits for the bus; then in
    /// the caller's turn once the bus has caught up, like a call, so that answers finished meanwhile are not built
    /// to wait in memory. Past the caller's limit of waiting calls, and not counted toward it: the call was let
    /// through once, and the service bounds what it holds.
    func answerInTurn(_ call: MethodCall, _ answer: @escaping @BusActor () -> Void) {
        guard !closed, holdServingIfBusIsBehind() else { return answer() }
        _ = turns.append(.answer(call, answer), from: call.sender, in: turnGroup?(call.sender), pastTheLimit: true)
    }

    /// Holds serving once more than ``backlogLimit`` waits for the bus, until it has caught up to
    /// ``backlogResumesAtOrBelow``; true while held.
    private func holdServingIfBusIsBehind() -> Bool {
        let waiting = outgoingBytes
        heldForBus = waiting > (heldForBus ? Connection.backlogResumesAtOrBelow : Connection.backlogLimit)
        return heldForBus
    }

    /// While something is held for the bus, once it has taken all but ``backlogResumesAtOrBelow`` of what waits for
    /// it, calls ``onBusCaughtUp`` and then serves the held calls, on the next turn of the loop. Called after libdbus
    /// wrote when its write watch fired and after each message sent; its other writes (``readAvailable()``, and
    /// libdbus's own answers while dispatching) are each followed by ``serveCalls()``, which looks at the queue
    /// again.
    func resumeIfBusCaughtUp() {
        guard heldForBus, !closed, outgoingBytes <= Connection.backlogResumesAtOrBelow else { return }
        heldForBus = false
        EventLoop.main.execute { [weak self] in
            self?.onBusCaughtUp?()
            self?.drain()
        }
    }

    /// Reads all the bus has sent so far (libdbus reads a few kilobytes at a time), so that a caller whose call
    /// is behind another's flood in the socket gets its turn without waiting for the flood to be handled.
    private func readAvailable() {
        guard let fd = socketDescriptor else { return }
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

    private func dispatchMethodCall(_ message: Message) {
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
            case .later: call.keepHeaderOnly()
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
        // As with GDBus, and so GeoClue, only an Introspect without arguments is one; any other falls through to the
        // object's methods and is refused as unknown there, with GDBus's texts.
        if member == "Introspect" && message.signature.isEmpty
            && (interface == nil || interface == "org.freedesktop.DBus.Introspectable")
        {
            guard !message.noReplyExpected else { return .values([]) }
            if let refusal = introspectionGate?(call.sender) { throw refusal }
            guard let viewOf = introspectionView else {
                return .values([.string(introspection(of: path, for: call.sender, view: .own))])
            }
            BusActor.task { [weak self] in
                do throws(DBusError) {
                    let view = try await viewOf(call)
                    guard let self else { return }
                    // The listing grows with the caller's clients: built in its turn.
                    call.replyInTurn { [unowned self] in
                        [.string(self.introspection(of: path, for: call.sender, view: view))]
                    }
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
}
