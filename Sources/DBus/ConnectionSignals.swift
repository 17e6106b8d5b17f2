import CDBus
import Loop

/// Subscribing to signals and emitting them.
extension Connection {
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
