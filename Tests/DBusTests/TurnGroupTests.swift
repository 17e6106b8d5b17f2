import Loop
import TestSupport
import Testing

@testable import DBus

/// The group of each caller, as a service would learn it.
@BusActor
final class GroupNames {
    var names: [String: String] = [:]
}

@Suite("Callers grouped for their turns")
@BusActor
struct TurnGroupTests {
    /// With ``Connection/turnGroup`` the groups take turns and their callers share them: the calls of two
    /// connections of one group, read first, and then a third's, are served one of the group for one of the third;
    /// without it each connection takes a turn of its own.
    @Test(arguments: [true, false])
    func theGroupsTakeTurns(grouped: Bool) throws {
        let recording = try RecordingServer()
        defer { recording.close() }
        let (server, object) = (recording.server, recording.object)
        if grouped { server.turnGroup = { $0.hasPrefix(":1.90") ? "one user" : "another user" } }
        for sender in [":1.901", ":1.902", ":1.800"] {
            for _ in 0..<4 { server.enqueueCall(try RecordingServer.call(from: sender)) }
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
        let recording = try RecordingServer()
        defer { recording.close() }
        let (server, object) = (recording.server, recording.object)
        let groups = GroupNames()
        server.turnGroup = { groups.names[$0] ?? "not known" }
        for sender in [":1.901", ":1.902"] {
            for _ in 0..<3 { server.enqueueCall(try RecordingServer.call(from: sender)) }
        }
        server.enqueueCall(try RecordingServer.call(from: ":1.800"))
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
}
