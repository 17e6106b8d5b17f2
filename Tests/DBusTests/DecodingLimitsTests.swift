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

    /// How many of this process's descriptors are open on the pipe `link` names (`pipe:[INODE]`). Other tests
    /// open and close descriptors all the time; none opens this pipe.
    static func descriptors(on link: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == link
        }.count
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
        let link = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(ends[0])")
        let message = try Self.message([.unixFD(ends[0]), .string("after")])
        let before = Self.descriptors(on: link)
        for _ in 0..<100 {
            #expect(message.arguments() == [.unixFD(-1), .string("after")])
        }
        #expect(Self.descriptors(on: link) == before, "decoding kept descriptors of the pipe open")
    }
}
