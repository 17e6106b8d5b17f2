import Glibc
import Loop
import TestSupport
import Testing
import WhereaboutsCore

@testable import DBus
@testable import GeoClueService

@Suite("Calls held before the caller's user is known")
@BusActor
struct HeldCallsUntilIdentifiedTests {
    /// A new connection's calls wait for its credentials, and no user can be charged for them until the bus answers.
    /// Once such calls fill their share in all (``GeoClueService/heldCallsUntilIdentified``, made small here), a
    /// new connection holds only a few: the flooding connection's next calls are refused with `LimitsExceeded`,
    /// while another new connection's first calls are still held and answered. To keep the bus from answering the
    /// credentials before the service has read the calls, the calls are put in the service's socket before it reads
    /// any, and the bus is then stopped for a moment.
    @Test(.timeLimit(.minutes(1)))
    func newConnectionsHoldFewCallsOnceTheirShareIsFull() async throws {
        let service = try await InProcessService()
        defer { service.stop() }
        service.service.heldCalls = HeldCallLedger(
            limits: GeoClueService.heldCallLimits, untilIdentified: .init(inAll: 20, perConnection: 4))
        let flood = try await service.app()
        let other = try await service.app()
        defer {
            flood.close()
            other.close()
        }
        let socket = try #require(service.connection.socketDescriptor)
        let sent = [(flood, 60), (other, 3)]
        let outcomes = await withCheckedContinuation { continuation in
            var outcomes: [[String]] = [[], []]
            for (index, (app, calls)) in sent.enumerated() {
                for _ in 0..<calls {
                    let message = try! Message.methodCall(
                        destination: GeoClueTestClient.service, path: GeoClueTestClient.managerPath,
                        interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
                    app.connection.call(message) { result in
                        switch result {
                        case .success: outcomes[index].append("answered")
                        case .failure(let error): outcomes[index].append("\(error.name): \(error.message)")
                        }
                        if outcomes[0].count == sent[0].1 && outcomes[1].count == sent[1].1 {
                            continuation.resume(returning: outcomes)
                        }
                    }
                }
                app.connection.flush()
            }
            // The loop is held until the bus has put most of the calls in the service's socket (some 150 bytes each),
            // and the bus is then stopped while the service reads and serves them: the credentials lookups cannot be
            // answered meanwhile.
            var unread: Int32 = 0
            for _ in 0..<2000 where ioctl(socket, UInt(FIONREAD), &unread) == 0 && Int(unread) < 60 * 100 {
                usleep(1000)
            }
            kill(service.bus.pid, SIGSTOP)
            _ = EventLoop.main.schedule(after: .milliseconds(300)) { kill(service.bus.pid, SIGCONT) }
        }
        let floodRefused = outcomes[0].filter { $0 != "answered" }
        #expect(outcomes[0].count - floodRefused.count >= 17, "\(outcomes[0])")
        #expect(!floodRefused.isEmpty, "every call of the flood was held: \(outcomes[0])")
        #expect(
            floodRefused.allSatisfy {
                $0.hasPrefix(DBusError.Name.limitsExceeded) && $0.contains("before its user is known")
                    && $0.contains("each may have 4")
            }, "\(floodRefused.first ?? "")")
        #expect(outcomes[1] == ["answered", "answered", "answered"], "\(outcomes[1])")
    }
}
