import CDBus
import Testing

@testable import DBus

/// Signals written in the wire format against the same signals built through libdbus's message API.
@Suite("Signals written in the wire format")
struct WireEncodingTests {
    /// The message as libdbus would send it: its body bytes and its header fields.
    struct Marshalled: Equatable {
        var body: [UInt8]
        var path, interface, member, destination, signature: String?

        init(_ message: Message) {
            dbus_message_set_serial(message.raw, 1)
            var data: UnsafeMutablePointer<CChar>?
            var length: Int32 = 0
            _ = dbus_message_marshal(message.raw, &data, &length)
            defer { dbus_free(data) }
            let bytes = Array(UnsafeBufferPointer(start: data, count: Int(length)).map { UInt8(bitPattern: $0) })
            let bodyLength = Int(bytes[4]) | Int(bytes[5]) << 8 | Int(bytes[6]) << 16 | Int(bytes[7]) << 24
            body = Array(bytes.suffix(bodyLength))
            func text(_ value: UnsafePointer<CChar>?) -> String? { value.map { String(cString: $0) } }
            path = text(dbus_message_get_path(message.raw))
            interface = text(dbus_message_get_interface(message.raw))
            member = text(dbus_message_get_member(message.raw))
            destination = text(dbus_message_get_destination(message.raw))
            signature = text(dbus_message_get_signature(message.raw))
        }
    }

    /// The same signal through libdbus's API, field by field and argument by argument.
    static func throughLibdbus(_ path: ObjectPath, _ arguments: [DBusValue], destination: String?) throws -> Message {
        let message = Message(owning: try #require(dbus_message_new_signal(path.rawValue, "org.example.Test", "Ping")))
        try message.append(arguments)
        if let destination { _ = dbus_message_set_destination(message.raw, destination) }
        return message
    }

    static let bodies: [[DBusValue]] =
        samples.map { [$0] } + [
            [],
            // Every alignment after every other, so padding is checked between arguments as well as inside.
            [
                .byte(1), .int64(-2), .uint16(3), .double(4.5), .boolean(true), .string("x"), .byte(7),
                .structure([.byte(1)]),
            ],
            [.array(element: "(yt)", [.structure([.byte(9), .uint64(10)])]), .byte(2), .array(element: "t", [])],
            [.string(interfaceName), .vardict(["Location": .variant(.objectPath(ObjectPath("/a/b")!))]), .strings([])],
            [.objectPath(ObjectPath("/org/freedesktop/GeoClue2/Client/1/Location/0")!), .objectPath(.root)],
        ]
    static let interfaceName = "org.freedesktop.GeoClue2.Client"

    @Test("the bytes and fields are libdbus's own", arguments: bodies)
    func sameAsLibdbus(_ arguments: [DBusValue]) throws {
        let path = ObjectPath("/org/example/Object_1")!
        for destination in [nil, ":1.42", "org.example.Name"] {
            let written = try Message.signal(
                path: path, interface: "org.example.Test", member: "Ping", arguments: arguments,
                destination: destination)
            #expect(dbus_message_get_serial(written.raw) == 0, "the connection must number it")
            #expect(written.arguments() == arguments)
            let built = try Self.throughLibdbus(path, arguments, destination: destination)
            #expect(Marshalled(written) == Marshalled(built))
        }
    }

    @Test func whatLibdbusWouldRefuseIsRefusedWithTheReason() {
        let path = ObjectPath("/a")!
        let bad: [(String, String, [DBusValue], String?)] = [
            ("nodots", "Ping", [], nil), ("org.example.Test", "Not.A.Member", [], nil),
            ("org.example.Test", "Ping", [], "not a bus name"), ("org.example.Test", "Ping", [.string("a\u{0}b")], nil),
            ("org.exa\u{0}mple.Test", "Ping", [], nil),
            ("org.example.Test", "Ping", [.array(element: "s", [.int32(1)])], nil),
        ]
        for (interface, member, arguments, destination) in bad {
            #expect(throws: DBusError.self, "\(interface) \(member) \(arguments) \(destination ?? "")") {
                _ = try Message.signal(
                    path: path, interface: interface, member: member, arguments: arguments, destination: destination)
            }
        }
    }
}
