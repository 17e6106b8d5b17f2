import DBus
import Loop
import WhereaboutsCore

/// Talking to the service: client objects, calls, properties, signals, and reading Location objects.
extension LocationManager {
    /// A new client object, made the app's and set to `accuracy`.
    func makeClient(accuracy: Accuracy) async throws(LocationError) -> ObjectPath {
        let client = try await createClient()
        try await configure(client, accuracy: accuracy)
        return client
    }

    /// A new client object (`CreateClient`), not yet the app's: ``configure(_:accuracy:)`` names the app.
    func createClient() async throws(LocationError) -> ObjectPath {
        guard let client = try await call(Self.managerPath, Self.geoClueManager, "CreateClient").first?.objectPath
        else {
            throw .other(name: "", message: "CreateClient returned no path")
        }
        return client
    }

    /// Makes `client` the app's (`DesktopId`) and sets the accuracy level it asks for.
    func configure(_ client: ObjectPath, accuracy: Accuracy) async throws(LocationError) {
        try await set(client, Self.geoClueClient, "DesktopId", .string(desktopId))
        try await set(client, Self.geoClueClient, "RequestedAccuracyLevel", .uint32(accuracy.rawValue))
    }

    func deleteClient(_ client: ObjectPath) {
        guard connection.isConnected,
            let message = try? Message.methodCall(
                destination: Self.service, path: Self.managerPath, interface: Self.geoClueManager,
                member: "DeleteClient",
                arguments: [.objectPath(client)])
        else { return }
        connection.send(message)
    }

    func subscribe(_ client: ObjectPath, _ handler: @escaping @BusActor (ObjectPath) -> Void)
        async throws(LocationError) -> SignalSubscription
    {
        try await subscribeToService(
            SignalMatch(path: client, interface: Self.geoClueClient, member: "LocationUpdated")
        ) {
            message in
            if let path = message.arguments().last?.objectPath { handler(path) }
        }
    }

    /// Subscribes to the signals `match` describes as the service sends them: the match names the service's
    /// unique name, so that a signal another peer addresses to this connection is not taken for the service's.
    func subscribeToService(_ match: SignalMatch, _ handler: @escaping @BusActor (Message) -> Void)
        async throws(LocationError) -> SignalSubscription
    {
        try await mapError { () async throws(DBusError) in
            let owner = try await connection.call(
                destination: "org.freedesktop.DBus", path: ObjectPath("/org/freedesktop/DBus")!,
                interface: "org.freedesktop.DBus", member: "GetNameOwner", arguments: [.string(Self.service)])
            var match = match
            match.sender = owner.first?.string
            return try await connection.subscribe(match) { handler($0) }
        }
    }

    /// Ends a stream: its subscriptions go, and so does its client.
    func end(_ client: ObjectPath, _ subscriptions: [SignalSubscription]) {
        for subscription in subscriptions { connection.unsubscribe(subscription) }
        deleteClient(client)
    }

    func read(_ path: ObjectPath) async throws(LocationError) -> Position {
        if try await isWhereabouts() {
            let values = try await getAll(path, Self.location)
            func known(_ key: String) -> Double? { values[key]?.double.flatMap { $0.isNaN ? nil : $0 } }
            return Position(
                latitude: known("Latitude") ?? .nan, longitude: known("Longitude") ?? .nan, altitude: known("Altitude"),
                horizontalAccuracy: known("HorizontalAccuracy") ?? .nan, verticalAccuracy: known("VerticalAccuracy"),
                course: known("Course"), speed: known("Speed"),
                timestamp: Int64(clamping: values["TimestampMilliseconds"]?.uint64 ?? 0),
                magneticHeading: known("MagneticHeading"), trueHeading: known("TrueHeading"),
                headingAccuracy: known("HeadingAccuracy"), provider: values["Provider"]?.string,
                isSimulated: values["Simulated"]?.bool ?? false, isStale: values["Stale"]?.bool ?? false,
                fixType: values["FixType"]?.string, hdop: known("HDOP"), vdop: known("VDOP"), pdop: known("PDOP"))
        }
        let values = try await getAll(path, Self.geoClueLocation)
        let stamp = values["Timestamp"]?.fields ?? []
        let seconds = stamp.first?.uint64 ?? 0
        let micros = stamp.count > 1 ? stamp[1].uint64 ?? 0 : 0
        return Position(
            latitude: values["Latitude"]?.double ?? .nan, longitude: values["Longitude"]?.double ?? .nan,
            altitude: values["Altitude"]?.double.flatMap { $0 <= -Double.greatestFiniteMagnitude ? nil : $0 },
            horizontalAccuracy: values["Accuracy"]?.double ?? .nan,
            course: values["Heading"]?.double.flatMap { $0 < 0 ? nil : $0 },
            speed: values["Speed"]?.double.flatMap { $0 < 0 ? nil : $0 },
            timestamp: Int64(clamping: seconds &* 1000 &+ micros / 1000))
    }

    /// How long a call that may prompt the user waits for the answer: a little longer than the service waits.
    static let promptTimeout: Duration = .seconds(310)

    func call(
        _ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25), interactive: Bool = false
    ) async throws(LocationError) -> [DBusValue] {
        try await mapError { () async throws(DBusError) in
            try await connection.call(
                destination: Self.service, path: path, interface: interface, member: member, arguments: arguments,
                timeout: timeout, allowsInteractiveAuthorization: interactive)
        }
    }

    /// Calls a method of `io.github.whereabouts1.Manager` that may need the management authorisation, letting the
    /// user's polkit agent prompt.
    func callManager(_ member: String, _ arguments: [DBusValue]) async throws(LocationError) -> [DBusValue] {
        try await call(
            Self.managerPath, Self.manager, member, arguments, timeout: Self.promptTimeout, interactive: true)
    }

    func get(_ path: ObjectPath, _ interface: String, _ name: String) async throws(LocationError) -> DBusValue {
        try await call(path, "org.freedesktop.DBus.Properties", "Get", [.string(interface), .string(name)]).first?
            .unwrapped ?? .structure([])
    }

    func getAll(_ path: ObjectPath, _ interface: String) async throws(LocationError) -> [String: DBusValue] {
        try await call(path, "org.freedesktop.DBus.Properties", "GetAll", [.string(interface)]).first?
            .stringKeyedEntries ?? [:]
    }

    func set(_ path: ObjectPath, _ interface: String, _ name: String, _ value: DBusValue)
        async throws(LocationError)
    {
        _ = try await call(
            path, "org.freedesktop.DBus.Properties", "Set", [.string(interface), .string(name), .variant(value)])
    }

    private func mapError<T>(_ body: () async throws(DBusError) -> T) async throws(LocationError) -> T {
        do {
            return try await body()
        } catch {
            throw LocationError(error)
        }
    }
}
