import CDBus
import Glibc
import Loop
import TestSupport
import Testing

@testable import DBus

/// An object whose one method answers with a large string, noting how many bytes waited for the bus as each answer
/// was built: as the call is served, or, when it answers later, on the next turn of the loop through
/// ``MethodCall/replyInTurn(_:)``.
@BusActor
final class LargeAnswerObject: ExportedObject {
    static let answerBytes = 8 << 10
    static let interface = InterfaceDescription(
        "io.github.whereabouts1.test.Large",
        methods: [MethodDescription("Answer", outputs: [Argument("text", "s")])])

    let answer = String(repeating: "x", count: LargeAnswerObject.answerBytes)
    let answersLater: Bool
    var queuedWhenBuilt: [Int] = []
    var server: Connection?

    init(answersLater: Bool) { self.answersLater = answersLater }

    var interfaces: [InterfaceDescription] { [LargeAnswerObject.interface] }

    func checkAccess(sender: String) -> DBus.DBusError? { nil }

    func handle(_ call: MethodCall, interface: String, method: String) throws(DBus.DBusError) -> Reply {
        guard answersLater else { return .values(build()) }
        EventLoop.main.execute { call.replyInTurn { [self] in build() } }
        return .later
    }

    private func build() -> [DBusValue] {
        queuedWhenBuilt.append(server?.outgoingBytes ?? 0)
        return [.string(answer)]
    }

    func property(_ name: String, interface: String) -> DBusValue { .boolean(false) }

    func setProperty(_ name: String, interface: String, value: DBusValue, sender: String) throws(DBus.DBusError) {}
}

@Suite("Calls wait while the bus is behind")
@BusActor
struct BusBackpressureTests {
    /// The bytes `message` takes on the wire as it is now.
    static func wireSize(_ message: Message) -> Int {
        var bytes: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(message.raw, &bytes, &length) != 0 else { return 0 }
        dbus_free(bytes)
        return Int(length)
    }

    /// A caller's small calls reach the service faster than the bus takes their larger answers. Without a pause
    /// every answer would wait in the service's memory; with it, no call is served, and no answer finished later
    /// built, while more than ``Connection/backlogLimit`` waits, and every call is still answered. To make the bus
    /// fall behind for sure, the calls are put in the service's socket before it reads any, and the bus is then
    /// stopped for a moment; the service's socket keeps only a few kilobytes, so that what it cannot write waits in
    /// libdbus's queue.
    @Test(.timeLimit(.minutes(1)), arguments: [false, true])
    func noAnswerIsBuiltWhileTheBusIsBehindAndEveryCallIsAnswered(answersLater: Bool) async throws {
        let peers = try ServerAndClient()
        defer { peers.close() }
        let (bus, server, client) = (peers.bus, peers.server, peers.client)
        let socket = try #require(server.socketDescriptor)
        var sendBuffer: Int32 = 8192
        try #require(setsockopt(socket, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size)) == 0)
        var caughtUp = 0
        server.onBusCaughtUp = { caughtUp += 1 }
        let object = LargeAnswerObject(answersLater: answersLater)
        object.server = server
        let path = ObjectPath("/io/github/whereabouts1/test/Large")!
        server.export(object, at: path)
        let name = "io.github.whereabouts1.test.Large"
        _ = try await server.requestName(name)
        let calls = 400
        let lengths = await withCheckedContinuation { continuation in
            var lengths: [Int] = []
            var callSize = 0
            for _ in 0..<calls {
                let message = try! Message.methodCall(
                    destination: name, path: path, interface: LargeAnswerObject.interface.name, member: "Answer")
                callSize = BusBackpressureTests.wireSize(message)
                client.call(message) { result in
                    let text = (try? result.get())?.arguments().first?.string
                    lengths.append(text?.utf8.count ?? 0)
                    if lengths.count == calls { continuation.resume(returning: lengths) }
                }
            }
            // The loop is held until the bus has put 100 calls in the service's socket (each grows by the sender's
            // name on the way; the kernel takes some 300 in all), far more than the answers the bound lets wait, so
            // that the service reads them together; the bus is then stopped until the service has served what it
            // could.
            client.flush()
            var unread: Int32 = 0
            for _ in 0..<2000 where ioctl(socket, UInt(FIONREAD), &unread) == 0 && Int(unread) < 100 * callSize {
                usleep(1000)
            }
            kill(bus.pid, SIGSTOP)
            _ = EventLoop.main.schedule(after: .milliseconds(300)) { kill(bus.pid, SIGCONT) }
        }
        #expect(lengths == Array(repeating: LargeAnswerObject.answerBytes, count: calls))
        let most = object.queuedWhenBuilt.max() ?? 0
        #expect(object.queuedWhenBuilt.count == calls)
        // 64 KiB, where the 400 answers are 3.1 MiB.
        #expect(most <= 64 << 10, "an answer was built with \(most) bytes waiting for the bus")
        // The run reached the pause: the bus fell behind by more than serving resumes at.
        #expect(most > Connection.backlogResumesAtOrBelow, "the bus never fell behind (\(most) bytes at most)")
        // Each time it caught up, the connection said so before serving the calls it held.
        #expect(caughtUp > 0)
    }

    /// A caller that leaves, or a connection that closes, while answers wait for the bus has them dropped unbuilt,
    /// and each of those calls counts as answered, so that whoever counts the calls it holds lets go of them.
    @Test(arguments: [false, true])
    func waitingAnswersAreDroppedAndCountedAnswered(connectionCloses: Bool) throws {
        let recording = try RecordingServer()
        defer { recording.close() }
        let server = recording.server
        let call = MethodCall(message: try RecordingServer.call(from: ":1.9999"), connection: server)
        var answered = 0
        var built = 0
        call.onAnswered = { answered += 1 }
        _ = server.turns.append(.answer(call, { built += 1 }), from: call.sender, pastTheLimit: true)
        if connectionCloses { server.close() } else { server.forgetCalls(from: ":1.9999") }
        #expect(answered == 1 && built == 0)
        #expect(server.turns.isEmpty)
        #expect(call.isAnswered)
    }
}
