import DBus
import Foundation
import Loop
import Testing

/// Calls that carry Unix file descriptors. No interface of the service takes one, so the binding refuses them
/// without decoding: decoding duplicates every descriptor, and nothing would close the copies.
@Suite("File descriptors from peers")
@BusActor
struct FileDescriptorTests {
    /// Found by fuzzing the message decoder: each call with a descriptor left a duplicate open in the service.
    @Test func aCallCarryingDescriptorsIsRefusedAndLeavesNoneOpen() async throws {
        let pair = try await Pair()
        defer { pair.close() }
        var pipeEnds: [Int32] = [-1, -1]
        #expect(pipe(&pipeEnds) == 0)
        defer { pipeEnds.forEach { close($0) } }
        _ = try await pair.call("Add", [.int32(1), .int32(2)])
        let before = try openDescriptorCount()
        for _ in 0..<16 {
            await expectError("org.freedesktop.DBus.Error.InvalidArgs") {
                _ = try await pair.call("Echo", [.variant(.unixFD(pipeEnds[0]))])
            }
        }
        // One more call: the service has finished with every earlier message once this one is answered.
        #expect(try await pair.call("Add", [.int32(1), .int32(2)]) == [.int32(3)])
        #expect(try openDescriptorCount() <= before)
    }

    private func openDescriptorCount() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
    }
}
