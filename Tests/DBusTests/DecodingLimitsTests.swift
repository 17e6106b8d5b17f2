import DBus
import Foundation
import Glibc
import Testing

/// What a peer can make the binding do with one message: no more than a bounded number of decoded values, and no
/// file descriptor kept open.
@Suite("Decoding limits")
struct DecodingLimitsTests {
    static func message(_ arguments: [DBusValue]) throws -> Message {
        try Message.methodCall(
            destination: "org.example.Test", path: ObjectPath("/org/example/Test")!, interface: "org.example.Test",
            member: "Call", arguments: arguments)
    }

    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? -1
    }

    @Test func aBodyWithinTheLimitDecodesWhole() throws {
        let bytes = DBusValue.array(element: "y", Array(repeating: .byte(7), count: Message.maximumDecodedValues - 1))
        let decoded = try Self.message([bytes]).boundedArguments()
        #expect(decoded == [bytes])
    }

    @Test func aBodyOverTheLimitIsNotDecoded() throws {
        let bytes = DBusValue.array(element: "y", Array(repeating: .byte(7), count: Message.maximumDecodedValues))
        let message = try Self.message([.string("before"), bytes])
        #expect(message.boundedArguments() == nil)
        #expect(message.arguments().isEmpty)
        let nested = DBusValue.dictionary(
            key: "s", value: "v",
            (0..<Message.maximumDecodedValues / 2).map { DBusValue.DictEntry(.string("k\($0)"), .variant(.uint32(1))) })
        #expect(try Self.message([nested]).boundedArguments() == nil, "entries, keys and variants all count")
    }

    @Test func receivedDescriptorsAreClosed() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        let message = try Self.message([.unixFD(ends[0]), .string("after")])
        let before = Self.openDescriptors()
        for _ in 0..<100 {
            #expect(message.arguments() == [.unixFD(-1), .string("after")])
        }
        #expect(Self.openDescriptors() == before, "decoding kept descriptors open")
    }
}
