import Glibc
import Loop
import TestSupport
import Testing

@testable import DBus
@testable import GeoClueService

/// What keeps one user's calls from delaying another's at the service's end of the bus.
@Suite("One user's calls do not wait behind another's")
@BusActor
struct ServiceBusFairnessTests {
    /// The service groups callers by user for their turns (``Connection/turnGroup``): the connections of one user
    /// share one group, so that opening many cannot keep another user's calls waiting, and connections whose user is
    /// not known yet share another.
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

    /// A connection whose calls need no user (reading the Manager's `InUse`) is still asked about as its first call
    /// is queued, so that its calls take its user's turns rather than those of connections not known yet.
    @Test(.timeLimit(.minutes(1)))
    func aCallerWhoseCallsNeedNoUserIsStillKnown() async throws {
        let service = try await InProcessService()
        defer { service.stop() }
        let app = try await service.app()
        defer { app.close() }
        _ = try await app.get(GeoClueTestClient.managerPath, "org.freedesktop.GeoClue2.Manager", "InUse")
        try await service.waitUntil("the bus to say whose the connection is") {
            service.service.peers.knownUser(of: app.connection.uniqueName) != nil
        }
    }

    /// The service's socket keeps little of what the bus has not read (``Connection/boundSocketBacklog()``), so that
    /// its reply to one user and its questions about a new caller do not wait behind 200 KiB of answers to another.
    @Test(.timeLimit(.minutes(1)))
    func theServiceSocketKeepsLittleOfWhatTheBusHasNotRead() async throws {
        let service = try await InProcessService()
        defer { service.stop() }
        let socket = try #require(service.connection.socketDescriptor)
        var bytes: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        try #require(getsockopt(socket, SOL_SOCKET, SO_SNDBUF, &bytes, &length) == 0)
        // The kernel doubles what it is given, for its bookkeeping.
        #expect(bytes == 2 * Connection.socketBacklogLimit)
    }
}
