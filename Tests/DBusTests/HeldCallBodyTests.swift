import Loop
import TestSupport
import Testing

@testable import DBus

/// An object whose `Hold` calls are answered only when the test says, and whose `Quick` calls at once.
@BusActor
final class HoldingObject: ExportedObject {
    static let interface = InterfaceDescription(
        "io.github.whereabouts1.test.Holding",
        methods: [MethodDescription("Hold", inputs: [Argument("payload", "s")]), MethodDescription("Quick")])

    var held: [MethodCall] = []

    var interfaces: [InterfaceDescription] { [HoldingObject.interface] }

    func checkAccess(sender: String) -> DBus.DBusError? { nil }

    func handle(_ call: MethodCall, interface: String, method: String) throws(DBus.DBusError) -> Reply {
        guard method == "Hold" else { return .values([]) }
        held.append(call)
        return .later
    }

    func property(_ name: String, interface: String) -> DBusValue { .boolean(false) }

    func setProperty(_ name: String, interface: String, value: DBusValue, sender: String) throws(DBus.DBusError) {}
}

@Suite("Calls answered later keep their header alone")
@BusActor
struct HeldCallBodyTests {
    /// libdbus stops reading once 63 MiB of the messages it read are still kept. A service holding calls with
    /// large bodies until something happens (a fix, polkit's answer, the caller's credentials) would stop reading
    /// the bus, and so the answers those calls wait for and everyone else's calls: 80 held calls of 1 MiB each, and
    /// another call is still served, because a held call keeps its header alone.
    @Test(.timeLimit(.minutes(1)))
    func heldCallsWithLargeBodiesDoNotStopTheServiceReading() async throws {
        let peers = try ServerAndClient()
        defer { peers.close() }
        let (server, client) = (peers.server, peers.client)
        let object = HoldingObject()
        let path = ObjectPath("/io/github/whereabouts1/test/Holding")!
        server.export(object, at: path)
        let name = "io.github.whereabouts1.test.Holding"
        _ = try await server.requestName(name)
        let payload = String(repeating: "x", count: 1 << 20)
        let heldCalls = 80
        var answered = 0
        for _ in 0..<heldCalls {
            let message = try Message.methodCall(
                destination: name, path: path, interface: HoldingObject.interface.name, member: "Hold",
                arguments: [.string(payload)])
            client.call(message, timeout: .seconds(50)) { result in
                if case .success = result { answered += 1 }
            }
        }
        _ = try await client.call(
            Message.methodCall(
                destination: name, path: path, interface: HoldingObject.interface.name, member: "Quick"),
            timeout: .seconds(20))
        #expect(object.held.count == heldCalls)
        #expect(object.held.allSatisfy { $0.arguments.isEmpty && $0.message.signature.isEmpty })
        for call in object.held { call.reply() }
        let deadline = ContinuousClock.now + .seconds(20)
        while answered < heldCalls && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(answered == heldCalls, "the held calls were answered through their headers")
    }
}
