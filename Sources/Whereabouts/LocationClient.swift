import DBus
import Loop

/// Errors from ``LocationClient``.
public struct LocationError: Error, Sendable, CustomStringConvertible {
    /// The D-Bus error name, when the service answered with one.
    public var name: String
    /// A human message.
    public var message: String
    public var description: String { "\(message) (\(name))" }

    init(_ error: DBusError) {
        name = error.name
        message = error.message
    }
}

/// A connection to a GeoClue2-compatible location service (Whereabouts or GeoClue itself).
@BusActor
public final class LocationClient {
    private let connection: Connection
    private static let service = "org.freedesktop.GeoClue2"
    private static let managerPath = ObjectPath("/org/freedesktop/GeoClue2/Manager")!

    /// Connects to the system bus, or to the bus at `address`.
    public init(address: String = Connection.systemBusAddress) throws(LocationError) {
        do {
            connection = try Connection.open(address: address)
        } catch {
            throw LocationError(error)
        }
    }

    /// Closes the connection; the service then deletes this connection's clients.
    public func close() { connection.close() }

    /// Positions as the service signals them, for `desktopId` at GeoClue accuracy `level` (8 = exact).
    ///
    /// The stream ends with an error when the service refuses to start the client or the bus goes away.
    public func positions(
        desktopId: String, level: UInt32 = 8, distanceThreshold: UInt32 = 0, timeThreshold: UInt32 = 0
    ) -> AsyncThrowingStream<Position, any Error> {
        AsyncThrowingStream { continuation in
            Task { @BusActor in
                do {
                    try await self.stream(
                        desktopId: desktopId, level: level, distance: distanceThreshold, time: timeThreshold,
                        into: continuation)
                } catch let error as DBusError {
                    continuation.finish(throwing: LocationError(error))
                } catch {
                    continuation.finish(throwing: error)
                }
            }
        }
    }

    private func stream(
        desktopId: String, level: UInt32, distance: UInt32, time: UInt32,
        into continuation: AsyncThrowingStream<Position, any Error>.Continuation
    ) async throws(DBusError) {
        let reply = try await connection.call(
            destination: Self.service, path: Self.managerPath, interface: "org.freedesktop.GeoClue2.Manager",
            member: "GetClient")
        guard let client = reply.first?.objectPath else { throw .failed("GetClient returned no path") }
        connection.onDisconnect = { continuation.finish(throwing: LocationError(.failed("the bus went away"))) }
        _ = try await connection.subscribe(
            SignalMatch(path: client, interface: "org.freedesktop.GeoClue2.Client", member: "LocationUpdated")
        ) { [connection] message in
            guard let location = message.arguments().last?.objectPath else { return }
            Task { @BusActor in
                guard let position = try? await LocationClient.read(location, on: connection) else { return }
                continuation.yield(position)
            }
        }
        try await set(client, "DesktopId", .string(desktopId))
        try await set(client, "RequestedAccuracyLevel", .uint32(level))
        try await set(client, "DistanceThreshold", .uint32(distance))
        try await set(client, "TimeThreshold", .uint32(time))
        _ = try await connection.call(
            destination: Self.service, path: client, interface: "org.freedesktop.GeoClue2.Client", member: "Start")
    }

    private func set(_ path: ObjectPath, _ name: String, _ value: DBusValue) async throws(DBusError) {
        _ = try await connection.call(
            destination: Self.service, path: path, interface: "org.freedesktop.DBus.Properties", member: "Set",
            arguments: [.string("org.freedesktop.GeoClue2.Client"), .string(name), .variant(value)])
    }

    private static func read(_ path: ObjectPath, on connection: Connection) async throws(DBusError) -> Position? {
        let reply = try await connection.call(
            destination: service, path: path, interface: "org.freedesktop.DBus.Properties", member: "GetAll",
            arguments: [.string("org.freedesktop.GeoClue2.Location")])
        guard let entries = reply.first?.stringKeyedEntries else { return nil }
        var views: [String: DBusValueView] = [:]
        for (key, value) in entries {
            var view = DBusValueView(double: value.double, string: value.string)
            if let fields = value.fields, fields.count == 2, let seconds = fields[0].uint64, let micros = fields[1].uint64 {
                view.pair = (seconds, micros)
            }
            views[key] = view
        }
        return Position(geoClueProperties: views)
    }
}
