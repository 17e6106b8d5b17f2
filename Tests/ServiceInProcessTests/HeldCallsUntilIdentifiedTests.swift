import CDBus
import GeoClueService
import Glibc
import Loop
import TestSupport
import Testing

@testable import DBus

@Suite("Calls held before the caller's user is known")
@BusActor
struct HeldCallsUntilIdentifiedTests {
    /// A new connection's calls wait for its credentials, which no user can be charged for until the bus answers:
    /// the service holds only ``GeoClueService/heldCallsUntilIdentified`` of them, refuses the rest with
    /// `LimitsExceeded`, and answers every call it held once the user is known. To keep the bus from answering the
    /// credentials before the service has read the calls, the calls are put in the service's socket before it reads
    /// any, and the bus is then stopped for a moment.
    @Test(.timeLimit(.minutes(1)))
    func aNewConnectionHoldsFewCallsUntilItsUserIsKnown() async throws {
        let service = try await InProcessService()
        defer { service.stop() }
        let app = try await service.app()
        defer { app.close() }
        let server = service.connection
        var socket: Int32 = -1
        try #require(dbus_connection_get_socket(server.raw, &socket) != 0)
        let calls = 60
        let outcomes = await withCheckedContinuation { continuation in
            var outcomes: [String] = []
            for _ in 0..<calls {
                let message = try! Message.methodCall(
                    destination: GeoClueTestClient.service, path: GeoClueTestClient.managerPath,
                    interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
                app.connection.call(message) { result in
                    switch result {
                    case .success: outcomes.append("answered")
                    case .failure(let error): outcomes.append("\(error.name): \(error.message)")
                    }
                    if outcomes.count == calls { continuation.resume(returning: outcomes) }
                }
            }
            // The loop is held until the bus has put most of the calls in the service's socket (some 150 bytes each),
            // and the bus is then stopped while the service reads and serves them: its credentials lookup cannot be
            // answered meanwhile.
            app.connection.flush()
            var unread: Int32 = 0
            for _ in 0..<2000 where ioctl(socket, UInt(FIONREAD), &unread) == 0 && Int(unread) < calls * 100 {
                usleep(1000)
            }
            kill(service.bus.pid, SIGSTOP)
            _ = EventLoop.main.schedule(after: .milliseconds(300)) { kill(service.bus.pid, SIGCONT) }
        }
        let answered = outcomes.filter { $0 == "answered" }.count
        let refused = outcomes.filter { $0 != "answered" }
        #expect(answered >= GeoClueService.heldCallsUntilIdentified, "\(outcomes)")
        #expect(!refused.isEmpty, "every call was held: \(outcomes)")
        #expect(
            refused.allSatisfy {
                $0.hasPrefix(DBusError.Name.limitsExceeded) && $0.contains("before its user is known (16)")
            }, "\(refused.first ?? "")")
    }
}
