import CDBus
import Loop
import TestSupport
import Testing

@testable import DBus

/// An object that notes the caller of each call it serves.
@BusActor
final class CallerRecordingObject: ExportedObject {
    static let interface = InterfaceDescription(
        "io.github.whereabouts1.test.Recording", methods: [MethodDescription("Note")])
    static let path = ObjectPath("/io/github/whereabouts1/test/Recording")!

    var callers: [String] = []

    var interfaces: [InterfaceDescription] { [CallerRecordingObject.interface] }

    func checkAccess(sender: String) -> DBus.DBusError? { nil }

    func handle(_ call: MethodCall, interface: String, method: String) throws(DBus.DBusError) -> Reply {
        callers.append(call.sender)
        return .values([])
    }

    func property(_ name: String, interface: String) -> DBusValue { .boolean(false) }

    func setProperty(_ name: String, interface: String, value: DBusValue, sender: String) throws(DBus.DBusError) {}
}

/// The group of each caller, as a service would learn it.
@BusActor
final class GroupNames {
    var names: [String: String] = [:]
}

@Suite("Callers grouped for their turns")
@BusActor
struct TurnGroupTests {
    /// A `Note` call as if read from the bus from `sender`, a name nobody has on the bus: its answer goes nowhere.
    static func call(from sender: String) throws -> Message {
        let message = try Message.methodCall(
            destination: ":1.0", path: CallerRecordingObject.path, interface: CallerRecordingObject.interface.name,
            member: "Note")
        try #require(dbus_message_set_sender(message.raw, sender) != 0)
        dbus_message_set_serial(message.raw, 1)
        return message
    }

    /// With ``Connection/turnGroup`` the groups take turns and their callers share them: the calls of two
    /// connections of one group, read first, and then a third's, are served one of the group for one of the third;
    /// without it each connection takes a turn of its own.
    @Test(arguments: [true, false])
    func theGroupsTakeTurns(grouped: Bool) throws {
        let bus = try PrivateBus()
        let server = try Connection.open(address: bus.address)
        defer {
            server.close()
            bus.stop()
        }
        let object = CallerRecordingObject()
        server.export(object, at: CallerRecordingObject.path)
        if grouped { server.turnGroup = { $0.hasPrefix(":1.90") ? "one user" : "another user" } }
        for sender in [":1.901", ":1.902", ":1.800"] {
            for _ in 0..<4 { server.enqueueCall(try Self.call(from: sender)) }
        }
        server.serveCalls()
        let (first, second, other) = (":1.901", ":1.902", ":1.800")
        let expected =
            grouped
            ? [first, other, second, other, first, other, second, other, first, second, first, second]
            : [first, second, other, first, second, other, first, second, other, first, second, other]
        #expect(object.callers == expected)
    }

    /// ``Connection/regroupCalls(of:)`` moves a caller's waiting calls to the group ``Connection/turnGroup`` names
    /// now: connections that sent their calls before their user was known stop sharing that group's turns with the
    /// next new connection's call.
    @Test func regroupedCallsTakeTheirNewGroupsTurns() throws {
        let bus = try PrivateBus()
        let server = try Connection.open(address: bus.address)
        defer {
            server.close()
            bus.stop()
        }
        let object = CallerRecordingObject()
        server.export(object, at: CallerRecordingObject.path)
        let groups = GroupNames()
        server.turnGroup = { groups.names[$0] ?? "not known" }
        for sender in [":1.901", ":1.902"] {
            for _ in 0..<3 { server.enqueueCall(try Self.call(from: sender)) }
        }
        server.enqueueCall(try Self.call(from: ":1.800"))
        for sender in [":1.901", ":1.902"] {
            groups.names[sender] = "one user"
            server.regroupCalls(of: sender)
        }
        server.serveCalls()
        // Left in the group of connections not known, the new connection's call would come third.
        #expect(object.callers.first == ":1.800", "\(object.callers)")
        #expect(
            object.callers.filter { $0 != ":1.800" } == [":1.901", ":1.902", ":1.901", ":1.902", ":1.901", ":1.902"])
    }

    /// A connection that closes counts the answers still waiting for their turn as answered, unbuilt, so that
    /// whoever counts the calls it holds lets go of them.
    @Test func aClosingConnectionCountsItsWaitingAnswersAnswered() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let server = try Connection.open(address: bus.address)
        let call = MethodCall(message: try Self.call(from: ":1.9999"), connection: server)
        var (answered, built) = (0, 0)
        call.onAnswered = { answered += 1 }
        _ = server.turns.append(.answer(call, { built += 1 }), from: call.sender, pastTheLimit: true)
        server.close()
        #expect(answered == 1 && built == 0)
        #expect(call.isAnswered && server.turns.isEmpty)
    }
}
