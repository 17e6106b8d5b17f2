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

/// A private bus with a connection that serves a ``CallerRecordingObject``, for the tests that put calls in the
/// connection's turns themselves.
@BusActor
struct RecordingServer {
    let bus: PrivateBus
    let server: Connection
    let object = CallerRecordingObject()

    init() throws {
        bus = try PrivateBus()
        server = try Connection.open(address: bus.address)
        server.export(object, at: CallerRecordingObject.path)
    }

    /// A `Note` call as if read from the bus from `sender`, a name nobody has on the bus: its answer goes nowhere.
    static func call(from sender: String) throws -> Message {
        let message = try Message.methodCall(
            destination: ":1.0", path: CallerRecordingObject.path, interface: CallerRecordingObject.interface.name,
            member: "Note")
        try #require(dbus_message_set_sender(message.raw, sender) != 0)
        dbus_message_set_serial(message.raw, 1)
        return message
    }

    func close() {
        server.close()
        bus.stop()
    }
}
