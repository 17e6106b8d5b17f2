import Loop
import TestSupport
import Testing

@testable import DBus

/// The service groups callers by user for their turns (``Connection/turnGroup``): the connections of one user share
/// one group, so that opening many cannot keep another user's calls waiting, and connections whose user is not
/// known yet share another.
@Suite("Callers take their turns by user")
@BusActor
struct ServiceTurnGroupTests {
    @Test(.timeLimit(.minutes(1)))
    func theConnectionsOfOneUserShareTheirTurns() async throws {
        let service = try await InProcessService()
        defer { service.stop() }
        let (first, second, unknown) = (try await service.app(), try await service.app(), try await service.app())
        defer {
            for app in [first, second, unknown] { app.close() }
        }
        _ = try await first.getClient()
        _ = try await second.getClient()
        let group = try #require(service.connection.turnGroup)
        let names = [first, second, unknown].map(\.connection.uniqueName)
        #expect(group(names[0]) == group(names[1]), "two connections of the test's user")
        #expect(group(names[2]) != group(names[0]), "a connection that has not called yet is not known")
        #expect(group(names[2]) == group(":1.99999"))
    }
}
