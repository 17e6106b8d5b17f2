import DBus
import Loop
import WhereaboutsCore

/// The login sessions of client processes, from logind (`org.freedesktop.login1`), for *when in use*.
///
/// A connection's process is looked up once with `Manager.GetSessionByPID`; a process in no session (an app that
/// a desktop started as a user service, for instance) falls back to its user's graphical session, the `Display`
/// of `Manager.GetUser`, as polkit does. Each session's `Active` is read once and then followed through
/// `PropertiesChanged` (and `SessionRemoved`), so a change reaches the clients at once; it is followed until the
/// session ends, not only while a connection is in it, so a process's next connection costs one call, not two
/// (the match rules select every session's changes either way). Signals count only when
/// they come from logind's own unique name. Every call has a timeout; logind absent from the bus means nobody can
/// tell (``LoginSession/unknown``, logged once), a wrong reply is a failure. Once the bus has said that nobody owns
/// or can start `org.freedesktop.login1`, logind is not asked again until `NameOwnerChanged` names an owner, so a
/// machine without logind is not asked one call in vain for every client connection.
@BusActor
final class SessionMonitor {
    static let busName = "org.freedesktop.login1"
    static let managerPath = ObjectPath("/org/freedesktop/login1")!
    static let managerInterface = "org.freedesktop.login1.Manager"
    static let sessionInterface = "org.freedesktop.login1.Session"
    static let userInterface = "org.freedesktop.login1.User"
    /// How long one call to logind may take.
    static let callTimeout: Duration = .seconds(5)

    private let connection: Connection
    private let logger: any Logger
    /// Called when a followed session becomes active or inactive.
    var onChange: (@BusActor (ObjectPath, Bool) -> Void)?

    /// The session of each looked-up connection; nil for a process in none.
    private var sessionOf: [String: ObjectPath?] = [:]
    /// `Active` of each followed session.
    private var active: [ObjectPath: Bool] = [:]
    /// Lookups under way, one per connection, which later asks for the same connection wait for.
    private var lookups: [String: Task<Result<LoginSession, Failure>, Never>] = [:]
    /// Connections that left the bus while they were being looked up: nothing is kept for them.
    private var departedDuringLookup: Set<String> = []
    /// logind's unique name, learnt from its replies and from `NameOwnerChanged`.
    private var logindOwner: String?
    private var subscribed = false
    private var reportedAbsence = false
    /// True from the bus answering that logind is not there until logind gets an owner.
    private var logindAbsent = false

    init(connection: Connection, logger: any Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// logind failed or answered nonsense.
    struct Failure: Error {
        var message: String
    }

    /// The session of the connection `busName`, whose process is `pid` run by `uid`. Asks made while the
    /// connection is being looked up wait for that lookup; it is kept only once its session's `Active` is known.
    func session(of busName: String, pid: UInt32?, uid: UInt32) async -> Result<LoginSession, Failure> {
        do throws(Failure) {
            try await subscribe()
        } catch {
            return .failure(error)
        }
        if let known = sessionOf[busName] { return .success(state(of: known)) }
        if let pending = lookups[busName] { return await pending.value }
        let lookup = BusActor.task { await self.lookUpAndFollow(busName, pid: pid, uid: uid) }
        lookups[busName] = lookup
        let result = await lookup.value
        lookups[busName] = nil
        lookups.releaseUnusedCapacity()
        departedDuringLookup.remove(busName)
        return result
    }

    private func lookUpAndFollow(_ busName: String, pid: UInt32?, uid: UInt32) async -> Result<LoginSession, Failure> {
        do throws(Failure) {
            guard let pid else { throw Failure(message: "the bus gave no process id for \(busName)") }
            guard let path = try await lookUp(pid: pid, uid: uid) else { return .success(.unknown) }
            if let path, active[path] == nil { active[path] = try await readActive(path) }
            if !departedDuringLookup.contains(busName) { sessionOf[busName] = path }
            return .success(state(of: path))
        } catch {
            return .failure(error)
        }
    }

    /// The session the connection `busName` was found in, if it was looked up and is in one.
    func sessionPath(of busName: String) -> ObjectPath? { sessionOf[busName] ?? nil }

    /// Forgets a connection that left the bus; its session's `Active` is still followed.
    func forget(_ busName: String) {
        if lookups[busName] != nil { departedDuringLookup.insert(busName) }
        sessionOf.removeValue(forKey: busName)
        sessionOf.releaseUnusedCapacity()
    }

    private func state(of path: ObjectPath?) -> LoginSession {
        guard let path else { return .outside }
        return active[path] == true ? .active : .inactive
    }

    /// The session path of `pid` (`.some(nil)`: in none), or nil when logind is absent.
    private func lookUp(pid: UInt32, uid: UInt32) async throws(Failure) -> ObjectPath?? {
        guard !logindAbsent else { return nil }
        let reply: Message
        do {
            reply = try await call(Self.managerPath, Self.managerInterface, "GetSessionByPID", [.uint32(pid)])
        } catch {
            switch error.name {
            case DBusError.Name.serviceUnknown, DBusError.Name.nameHasNoOwner:
                // Unless logind got an owner while the answer was on its way.
                if logindOwner == nil { logindAbsent = true }
                if !reportedAbsence {
                    reportedAbsence = true
                    logger.notice(
                        "logind is not on the bus: login sessions cannot be told apart, so 'when in use' grants hold")
                }
                return nil
            case "org.freedesktop.login1.NoSessionForPID":
                return .some(try await displaySession(uid: uid))
            default:
                throw Failure(message: "logind's GetSessionByPID failed: \(error)")
            }
        }
        return .some(try objectPath(reply, what: "GetSessionByPID"))
    }

    /// The graphical session of `uid` (`User.Display`), or nil when it has none.
    private func displaySession(uid: UInt32) async throws(Failure) -> ObjectPath? {
        let reply: Message
        do {
            reply = try await call(Self.managerPath, Self.managerInterface, "GetUser", [.uint32(uid)])
        } catch {
            if error.name == "org.freedesktop.login1.NoSuchUser" { return nil }
            throw Failure(message: "logind's GetUser failed: \(error)")
        }
        let user = try objectPath(reply, what: "GetUser")
        let display = try await property(user, Self.userInterface, "Display")
        guard let fields = display.fields, fields.count == 2, let path = fields[1].objectPath else {
            throw Failure(message: "logind's User.Display is \(display.signature), not (so)")
        }
        return path == .root ? nil : path
    }

    private func readActive(_ session: ObjectPath) async throws(Failure) -> Bool {
        let value = try await property(session, Self.sessionInterface, "Active")
        guard let flag = value.bool else {
            throw Failure(message: "logind's Session.Active is \(value.signature), not b")
        }
        return flag
    }

    private func property(_ path: ObjectPath, _ interface: String, _ name: String) async throws(Failure) -> DBusValue {
        let reply: Message
        do {
            reply = try await call(path, "org.freedesktop.DBus.Properties", "Get", [.string(interface), .string(name)])
        } catch {
            throw Failure(message: "cannot read \(name) of \(path) from logind: \(error)")
        }
        guard let value = reply.arguments().first, value.signature == "v" else {
            throw Failure(message: "logind answered Get(\(name)) with (\(reply.signature))")
        }
        return value.unwrapped
    }

    private func objectPath(_ reply: Message, what: String) throws(Failure) -> ObjectPath {
        guard let path = reply.arguments().first?.objectPath else {
            throw Failure(message: "logind answered \(what) with (\(reply.signature)), not (o)")
        }
        return path
    }

    private func call(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue])
        async throws(DBusError) -> Message
    {
        let message = try Message.methodCall(
            destination: Self.busName, path: path, interface: interface, member: member, arguments: arguments)
        let reply = try await connection.call(message, timeout: Self.callTimeout)
        if let sender = reply.sender { logindOwner = sender }
        return reply
    }

    // MARK: Following sessions

    /// Subscribes, once, to logind's session changes and to logind coming and going.
    private func subscribe() async throws(Failure) {
        guard !subscribed else { return }
        subscribed = true
        do {
            _ = try await connection.subscribe(
                SignalMatch(
                    sender: Self.busName, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                    stringArguments: [0: Self.sessionInterface])
            ) { [weak self] message in self?.propertiesChanged(message) }
            _ = try await connection.subscribe(
                SignalMatch(
                    sender: Self.busName, path: Self.managerPath, interface: Self.managerInterface,
                    member: "SessionRemoved")
            ) { [weak self] message in self?.sessionRemoved(message) }
            _ = try await connection.subscribe(
                SignalMatch(
                    sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                    stringArguments: [0: Self.busName])
            ) { [weak self] message in self?.ownerChanged(message) }
        } catch {
            subscribed = false
            throw Failure(message: "cannot follow logind's sessions: \(error)")
        }
    }

    /// True when `message` comes from logind itself, not from a peer posing as it.
    private func fromLogind(_ message: Message) -> Bool {
        guard let sender = message.sender, let logindOwner else { return false }
        return sender == logindOwner
    }

    private func propertiesChanged(_ message: Message) {
        guard fromLogind(message), let path = message.path, active[path] != nil else { return }
        let arguments = message.arguments()
        guard arguments.count == 3 else { return }
        if let value = arguments[1].stringKeyedEntries?["Active"] {
            guard let flag = value.unwrapped.bool else { return }
            set(path, active: flag)
        } else if arguments[2].elements?.contains(.string("Active")) == true {
            BusActor.task { [self] in
                if let flag = try? await readActive(path) { set(path, active: flag) }
            }
        }
    }

    /// A session ended: its connections' clients are held, and it is no longer followed.
    private func sessionRemoved(_ message: Message) {
        guard fromLogind(message), let path = message.arguments().last?.objectPath, active[path] != nil else { return }
        set(path, active: false)
        active[path] = nil
    }

    /// logind restarted or went away: its unique name changes; the followed sessions are read again.
    private func ownerChanged(_ message: Message) {
        guard message.arguments().count == 3, let owner = message.arguments()[2].string else { return }
        logindOwner = owner.isEmpty ? nil : owner
        guard logindOwner != nil else { return }
        logindAbsent = false
        for path in active.keys {
            BusActor.task { [self] in
                if let flag = try? await readActive(path) { set(path, active: flag) }
            }
        }
    }

    private func set(_ path: ObjectPath, active flag: Bool) {
        guard let previous = active[path], previous != flag else { return }
        active[path] = flag
        logger.info("login session \(path) is \(flag ? "active" : "inactive")")
        onChange?(path, flag)
    }
}
