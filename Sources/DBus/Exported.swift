import Loop

/// One argument of a method or signal, for introspection and signature checks.
public struct Argument: Sendable, Hashable {
    public var name: String
    public var signature: String
    public init(_ name: String, _ signature: String) {
        self.name = name
        self.signature = signature
    }
}

/// A method an exported interface offers.
public struct MethodDescription: Sendable, Hashable {
    public var name: String
    public var inputs: [Argument]
    public var outputs: [Argument]
    public init(_ name: String, inputs: [Argument] = [], outputs: [Argument] = []) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
    }
    /// The body signature a call must carry.
    public var inputSignature: String { inputs.map(\.signature).joined() }
}

/// A property an exported interface offers.
public struct PropertyDescription: Sendable, Hashable {
    /// Who may read or write it, as introspection's `access` attribute says.
    public enum Access: String, Sendable {
        case read, write, readwrite
    }
    public var name: String
    public var signature: String
    public var access: Access
    /// Introspection's annotations of the property, by name.
    public var annotations: [String: String]
    public init(_ name: String, _ signature: String, _ access: Access, annotations: [String: String] = [:]) {
        self.name = name
        self.signature = signature
        self.access = access
        self.annotations = annotations
    }
}

/// A signal an exported interface may emit.
public struct SignalDescription: Sendable, Hashable {
    public var name: String
    public var arguments: [Argument]
    public init(_ name: String, arguments: [Argument] = []) {
        self.name = name
        self.arguments = arguments
    }
}

/// An interface: the declarative table an exported object serves and introspection describes.
public struct InterfaceDescription: Sendable, Hashable {
    public var name: String
    public var methods: [MethodDescription]
    public var properties: [PropertyDescription]
    public var signals: [SignalDescription]
    public init(
        _ name: String, methods: [MethodDescription] = [], properties: [PropertyDescription] = [],
        signals: [SignalDescription] = []
    ) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }

    /// The method called `name`.
    public func method(_ name: String) -> MethodDescription? { methods.first { $0.name == name } }
    /// The property called `name`.
    public func property(_ name: String) -> PropertyDescription? { properties.first { $0.name == name } }
}

/// What a method handler gives back: the reply's values now, or a promise to answer through the ``MethodCall``.
public enum Reply: Sendable {
    case values([DBusValue])
    case later
}

/// Properties read for a `Get` or `GetAll`: their values now, or, for a read that needs asynchronous work first
/// (who the caller is, for instance), that work, which returns what reads the values in the caller's turn
/// (``MethodCall/replyInTurn(_:)``).
public enum PropertyRead {
    case values([String: DBusValue])
    case later(@BusActor () async throws(DBusError) -> @BusActor () -> [String: DBusValue])
}

/// An object served on the bus. The connection does the generic work (routing, introspection, the standard
/// `org.freedesktop.DBus.Properties` methods, signature and access checks, error replies); the object supplies
/// its state and behaviour.
@BusActor
public protocol ExportedObject: AnyObject {
    /// The object's own interfaces, in introspection order.
    var interfaces: [InterfaceDescription] { get }

    /// An error when `sender` may not call methods or read or write properties of this object; nil when it may.
    func checkAccess(sender: String) -> DBusError?

    /// Handles a call to `method` of `interface`; the body already matches the method's input signature.
    func handle(_ call: MethodCall, interface: String, method: String) throws(DBusError) -> Reply

    /// The current value of a readable property declared in `interfaces`.
    func property(_ name: String, interface: String) -> DBusValue

    /// An error when the property `name` may not be read now by the object's permitted callers: `Get` fails with
    /// it and `GetAll` leaves the property out. By default nil: every readable property is readable.
    func readRefusal(of name: String, interface: String) -> DBusError?

    /// The readable properties `names` of `interface` for the `Get` or `GetAll` call `call`, now or later. By
    /// default each is ``property(_:interface:)``, read at once.
    func read(_ names: [String], interface: String, call: MethodCall) -> PropertyRead

    /// Writes a writable property; `value` already has the declared type.
    func setProperty(_ name: String, interface: String, value: DBusValue, sender: String) throws(DBusError)

    /// Writes a writable property for the `Set` call `call`, answering now (`.values([])`) or later through `call`
    /// when the change needs asynchronous work first, such as an authorisation check. By default it is
    /// ``setProperty(_:interface:value:sender:)``, answered at once.
    func setProperty(_ name: String, interface: String, value: DBusValue, call: MethodCall) throws(DBusError) -> Reply
}

/// Objects served below one path and found when asked, such as the clients and their numbered `Location` objects:
/// the connection keeps one entry for the whole subtree instead of one for every object in it (and for every node
/// on the way to each), which matters where objects are made for every app and released on every fix.
@BusActor
public protocol ExportedSubtree: AnyObject {
    /// The object at `relativePath`, the part of its path below the subtree's root without the leading slash (`7`,
    /// `7/Location/3`), and the one connection it is shown to, or nil when everyone may see it.
    func object(at relativePath: Substring) -> (object: any ExportedObject, owner: String?)?

    /// The names of the nodes directly below `relativePath` (empty for the root itself) that lead to objects shown
    /// to `viewer`, or to anyone when `viewer` is nil.
    func childNames(below relativePath: Substring, visibleTo viewer: String?) -> [String]
}

extension ExportedObject {
    public func checkAccess(sender: String) -> DBusError? { nil }

    public func readRefusal(of name: String, interface: String) -> DBusError? { nil }

    public func read(_ names: [String], interface: String, call: MethodCall) -> PropertyRead {
        var values: [String: DBusValue] = [:]
        for name in names { values[name] = property(name, interface: interface) }
        return .values(values)
    }

    public func setProperty(_ name: String, interface: String, value: DBusValue, sender: String) throws(DBusError) {
        throw .invalidArgs("Property “\(name)” is not writable")
    }

    public func setProperty(_ name: String, interface: String, value: DBusValue, call: MethodCall) throws(DBusError)
        -> Reply
    {
        try setProperty(name, interface: interface, value: value, sender: call.sender)
        return .values([])
    }
}

/// An incoming method call being served. At most one reply is sent for it, whether the handler returns values,
/// throws, or answers later with ``reply(_:)``, ``fail(_:)`` or ``replyInTurn(_:)``; none only when its caller left
/// before an answer built in its turn was due.
@BusActor
public final class MethodCall {
    /// The call message; once its handler has said it answers later, the header alone (``keepHeaderOnly()``).
    public private(set) var message: Message
    /// The caller's unique bus name.
    public let sender: String
    /// The decoded arguments; empty once the handler has said it answers later.
    public private(set) var arguments: [DBusValue]
    /// True when the body held more than ``Message/maximumDecodedValues`` values, so that it was not decoded and
    /// the call is refused before any handler sees it.
    let isOversized: Bool
    /// The connection the call arrived on.
    public let connection: Connection
    private var answered = false
    /// Called once when the call is answered (a reply or an error, sent or not), for a caller that counts the
    /// calls it holds.
    public var onAnswered: (@BusActor () -> Void)?

    init(message: Message, connection: Connection) {
        self.message = message
        self.sender = message.sender ?? ""
        let decoded = message.boundedArguments()
        self.arguments = decoded ?? []
        self.isOversized = decoded == nil
        self.connection = connection
    }

    /// Lets go of the body and the decoded arguments of a call its handler answers later, having taken what it needs
    /// from them: libdbus stops reading the bus while 63 MiB of the messages it read are still kept, so calls held
    /// with large bodies would otherwise stop the service reading anyone's calls, and the replies they wait for.
    func keepHeaderOnly() {
        guard !answered, let header = message.headerOnly() else { return }
        message = header
        arguments = []
    }

    /// True once a reply or error has been sent.
    public var isAnswered: Bool { answered }

    /// Sends the successful reply; later answers are ignored.
    public func reply(_ values: [DBusValue] = []) {
        guard !answered else { return }
        markAnswered()
        guard !message.noReplyExpected else { return }
        do {
            connection.send(try message.methodReturn(values))
        } catch {
            sendError(error)
        }
    }

    /// Sends an error reply; later answers are ignored. A refusal past a limit (`LimitsExceeded`) slows the
    /// caller's next calls (``Connection/noteRefusedPastLimit(_:)``).
    public func fail(_ error: DBusError) {
        guard !answered else { return }
        markAnswered()
        if error.name == DBusError.Name.limitsExceeded { connection.noteRefusedPastLimit(sender) }
        guard !message.noReplyExpected else { return }
        sendError(error)
    }

    /// Sends the reply `build` gives, or the error it throws, building it in the caller's turn: at once, unless more
    /// than ``Connection/backlogLimit`` waits for the bus, and then once the bus has caught up, as the caller's next
    /// call would be served. For an answer that grows with what the service holds (an `Introspect` listing,
    /// `ActiveApps`, a record of use): the answers the service finishes while the bus is behind do not wait in its
    /// memory. If the caller leaves first, nothing is built or sent, and the call counts as answered.
    public func replyInTurn(_ build: @escaping @BusActor () throws(DBusError) -> [DBusValue]) {
        guard !answered else { return }
        connection.answerInTurn(self) { [self] in
            do throws(DBusError) {
                reply(try build())
            } catch {
                fail(error)
            }
        }
    }

    /// Counts the call as answered without sending anything: its caller has left.
    func abandon() {
        guard !answered else { return }
        markAnswered()
    }

    private func markAnswered() {
        answered = true
        let handler = onAnswered
        onAnswered = nil
        handler?()
    }

    private func sendError(_ error: DBusError) {
        if let reply = message.errorReply(error) { connection.send(reply) }
    }
}

/// Introspection XML for exported objects.
enum Introspection {
    static let header = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
        "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">

        """

    static let standardInterfaces: [InterfaceDescription] = [
        InterfaceDescription(
            "org.freedesktop.DBus.Properties",
            methods: [
                MethodDescription(
                    "Get", inputs: [Argument("interface_name", "s"), Argument("property_name", "s")],
                    outputs: [Argument("value", "v")]),
                MethodDescription(
                    "GetAll", inputs: [Argument("interface_name", "s")], outputs: [Argument("properties", "a{sv}")]),
                MethodDescription(
                    "Set",
                    inputs: [Argument("interface_name", "s"), Argument("property_name", "s"), Argument("value", "v")]),
            ],
            signals: [
                SignalDescription(
                    "PropertiesChanged",
                    arguments: [
                        Argument("interface_name", "s"), Argument("changed_properties", "a{sv}"),
                        Argument("invalidated_properties", "as"),
                    ])
            ]),
        InterfaceDescription(
            "org.freedesktop.DBus.Introspectable",
            methods: [MethodDescription("Introspect", outputs: [Argument("xml_data", "s")])]),
        InterfaceDescription(
            "org.freedesktop.DBus.Peer",
            methods: [
                MethodDescription("Ping"), MethodDescription("GetMachineId", outputs: [Argument("machine_uuid", "s")]),
            ]),
    ]

    static func document(interfaces: [InterfaceDescription], children: [String]) -> String {
        var xml = header + "<node>\n"
        if !interfaces.isEmpty {
            for interface in standardInterfaces + interfaces { xml += describe(interface) }
        }
        for child in children { xml += " <node name=\"\(child)\"/>\n" }
        return xml + "</node>\n"
    }

    private static func describe(_ interface: InterfaceDescription) -> String {
        var xml = " <interface name=\"\(interface.name)\">\n"
        for method in interface.methods {
            xml += "  <method name=\"\(method.name)\">\n"
            for arg in method.inputs {
                xml += "   <arg type=\"\(arg.signature)\" name=\"\(arg.name)\" direction=\"in\"/>\n"
            }
            for arg in method.outputs {
                xml += "   <arg type=\"\(arg.signature)\" name=\"\(arg.name)\" direction=\"out\"/>\n"
            }
            xml += "  </method>\n"
        }
        for signal in interface.signals {
            xml += "  <signal name=\"\(signal.name)\">\n"
            for arg in signal.arguments { xml += "   <arg type=\"\(arg.signature)\" name=\"\(arg.name)\"/>\n" }
            xml += "  </signal>\n"
        }
        for property in interface.properties {
            let attributes =
                "type=\"\(property.signature)\" name=\"\(property.name)\" access=\"\(property.access.rawValue)\""
            guard !property.annotations.isEmpty else {
                xml += "  <property \(attributes)/>\n"
                continue
            }
            xml += "  <property \(attributes)>\n"
            for (name, value) in property.annotations.sorted(by: { $0.key < $1.key }) {
                xml += "   <annotation name=\"\(name)\" value=\"\(value)\"/>\n"
            }
            xml += "  </property>\n"
        }
        return xml + " </interface>\n"
    }
}
