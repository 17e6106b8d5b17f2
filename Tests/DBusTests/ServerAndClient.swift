import Loop
import TestSupport

@testable import DBus

/// A private bus with a connection that serves and one that calls it, for the tests of serving.
@BusActor
struct ServerAndClient {
    let bus: PrivateBus
    let server: Connection
    let client: Connection

    init() throws {
        bus = try PrivateBus()
        server = try Connection.open(address: bus.address)
        client = try Connection.open(address: bus.address)
    }

    func close() {
        client.close()
        server.close()
        bus.stop()
    }
}
