import DBus
import Loop
import WhereaboutsCore

/// The entry point for apps: location from Whereabouts, or from a plain GeoClue 2 where what GeoClue supports
/// works and the rest throws ``LocationError/unsupported(_:)``.
///
/// One instance holds one bus connection; each request or stream uses a client object of its own
/// (`CreateClient`), deleted when it ends.
@BusActor
public final class LocationManager {
    static let service = BusNames.GeoClue.busName
    static let managerPath = ObjectPath(BusNames.GeoClue.managerPath)!
    static let geoClueManager = BusNames.GeoClue.managerInterface
    static let geoClueClient = BusNames.GeoClue.clientInterface
    static let geoClueLocation = BusNames.GeoClue.locationInterface
    static let manager = BusNames.Whereabouts.managerInterface
    static let client = BusNames.Whereabouts.clientInterface
    static let location = BusNames.Whereabouts.locationInterface

    let connection: Connection
    /// The app's desktop id, which the service checks (`DesktopId`).
    public let desktopId: String
    private var extended: Bool?
    /// The sequences being produced, by a number of their own.
    private var streams: [UInt64: RunningStream] = [:]
    private var nextStreamNumber: UInt64 = 0

    /// Connects to the system bus, or to the bus at `address`, for the app `desktopId`.
    public init(desktopId: String, address: String = Connection.systemBusAddress) throws(LocationError) {
        self.desktopId = desktopId
        do {
            connection = try Connection.open(address: address)
        } catch {
            throw .serviceUnavailable(error.message)
        }
        connection.onDisconnect = { [weak self] in
            guard let self else { return }
            for stream in streams.values { stream.finish(.serviceUnavailable("the bus went away")) }
        }
    }

    /// Closes the connection; the service deletes this connection's clients.
    public func close() { connection.close() }

    /// Ends every sequence this manager produces and waits until each has let go of its client and signals and
    /// has no call in flight; what they sent is written to the bus before this returns. For a process about to exit.
    public func endStreams() async {
        let running = Array(streams.values)
        for stream in running { stream.finish(nil) }
        for stream in running { await stream.task.value }
        connection.flush()
    }

    /// True when the service has Whereabouts' interfaces, false for a plain GeoClue.
    public func isWhereabouts() async throws(LocationError) -> Bool {
        if let extended { return extended }
        let xml = try await call(Self.managerPath, "org.freedesktop.DBus.Introspectable", "Introspect").first?.string
        let answer = xml?.contains("\"\(Self.manager)\"") ?? false
        extended = answer
        return answer
    }

    /// Whether location services are on (`io.github.whereabouts1.Manager.LocationServicesEnabled`). A plain
    /// GeoClue has no such switch: ``LocationError/unsupported(_:)``.
    public func servicesEnabled() async throws(LocationError) -> Bool {
        guard try await isWhereabouts() else { throw .unsupported("the location services switch") }
        return try await get(Self.managerPath, Self.manager, "LocationServicesEnabled").bool ?? false
    }

    /// Switches location services on or off for everyone (`Set` of `io.github.whereabouts1.Manager.LocationServicesEnabled`);
    /// needs the management authorisation, for which the user's polkit agent may prompt. Whereabouts only.
    public func setServicesEnabled(_ enabled: Bool) async throws(LocationError) {
        guard try await isWhereabouts() else { throw .unsupported("switching location services") }
        _ = try await call(
            Self.managerPath, "org.freedesktop.DBus.Properties", "Set",
            [.string(Self.manager), .string("LocationServicesEnabled"), .variant(.boolean(enabled))],
            timeout: Self.promptTimeout, interactive: true)
    }

    /// Serves this location from the static source, for everyone, in the place of its file and until
    /// ``clearStaticLocation()`` (`io.github.whereabouts1.Manager.SetStaticLocation`); needs the management
    /// authorisation. Whereabouts only.
    public func setStaticLocation(latitude: Double, longitude: Double, altitude: Double = 0, accuracy: Double)
        async throws(LocationError)
    {
        guard try await isWhereabouts() else { throw .unsupported("setting the static location") }
        _ = try await callManager(
            "SetStaticLocation", [.double(latitude), .double(longitude), .double(altitude), .double(accuracy)])
    }

    /// Forgets the location ``setStaticLocation(latitude:longitude:altitude:accuracy:)`` set
    /// (`ClearStaticLocation`); needs the management authorisation. Whereabouts only.
    public func clearStaticLocation() async throws(LocationError) {
        guard try await isWhereabouts() else { throw .unsupported("setting the static location") }
        _ = try await callManager("ClearStaticLocation", [])
    }

    /// One fix: Whereabouts' `RequestLocation`, or on a plain GeoClue a client started until its first fix.
    public func requestLocation(_ options: RequestOptions = RequestOptions()) async throws(LocationError) -> Position {
        let client = try await makeClient(accuracy: options.accuracy)
        defer { deleteClient(client) }
        if try await isWhereabouts() {
            var values: [String: DBusValue] = [
                "timeout": .uint32(UInt32(clamping: options.timeout.milliseconds)),
                "high-accuracy": .boolean(options.highAccuracy),
            ]
            if let maximumAge = options.maximumAge {
                values["maximum-age"] = .uint32(UInt32(clamping: maximumAge.milliseconds))
            }
            let reply = try await call(
                client, Self.client, "RequestLocation", [.vardict(values)], timeout: options.timeout + .seconds(5))
            guard let path = reply.first?.objectPath else { throw .other(name: "", message: "no location path") }
            return try await read(path)
        }
        guard options.maximumAge == nil else { throw .unsupported("a maximum age") }
        let first = FirstSignal()
        let subscription = try await subscribe(client) { path in first.deliver(path) }
        defer { connection.unsubscribe(subscription) }
        _ = try await call(client, Self.geoClueClient, "Start")
        let timer = EventLoop.main.schedule(after: options.timeout) { first.expire() }
        defer { EventLoop.main.cancel(timer) }
        guard let path = await first.wait() else { throw .timeout }
        return try await read(path)
    }

    /// Fixes as the service signals them, until the stream is dropped or fails. Each `LocationUpdated` is read and
    /// delivered in the order the service sent them; on Whereabouts, a fix the service completes in place
    /// (`PropertiesChanged` of the newest Location) is delivered again, complete.
    public func locations(_ configuration: MonitoringConfiguration = MonitoringConfiguration())
        -> AsyncThrowingStream<Position, any Error>
    {
        AsyncThrowingStream { continuation in
            produce(continuation) { () async throws(LocationError) in
                let (events, eventInput) = AsyncStream.makeStream(of: LocationEvent.self)
                continuation.onTermination = { _ in eventInput.finish() }
                let client = try await self.makeClient(accuracy: configuration.accuracy)
                var subscriptions: [SignalSubscription] = []
                defer { self.end(client, subscriptions) }
                let extended = try await self.isWhereabouts()
                if extended {
                    try await self.set(client, Self.client, "HighAccuracy", .boolean(configuration.highAccuracy))
                    try await self.set(
                        client, Self.client, "MinimumUpdateDistance", .double(configuration.minimumUpdateDistance))
                } else if configuration.minimumUpdateDistance > 0 {
                    try await self.set(
                        client, Self.geoClueClient, "DistanceThreshold",
                        .uint32(UInt32(configuration.minimumUpdateDistance.rounded(.up))))
                }
                subscriptions.append(try await self.subscribe(client) { eventInput.yield(.updated($0)) })
                if extended {
                    subscriptions.append(
                        try await self.subscribeToService(
                            SignalMatch(path: client, interface: Self.client, member: "AvailabilityChanged")
                        ) { message in
                            guard message.arguments().last?.string == "authorisation-changed" else { return }
                            continuation.finish(
                                throwing: LocationError.permissionDenied("the authorisation was revoked"))
                        })
                    subscriptions.append(
                        try await self.subscribeToService(
                            SignalMatch(
                                interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                                stringArguments: [0: Self.location])
                        ) { message in
                            if let path = message.path { eventInput.yield(.refreshed(path)) }
                        })
                }
                _ = try await self.call(client, Self.geoClueClient, "Start")
                var newest: ObjectPath?
                for await event in events {
                    switch event {
                    case .updated(let path): newest = path
                    case .refreshed(let path): guard path == newest else { continue }
                    }
                    guard let path = newest, let position = try? await self.read(path) else { continue }
                    continuation.yield(position)
                }
            }
        }
    }

    /// Whether a location can be had now, then every change: the Manager's `AvailableAccuracyLevel > 0` and its
    /// `PropertiesChanged`, on Whereabouts (where it reads 0 while location services are off) and on a plain
    /// GeoClue alike.
    public func availability() -> AsyncThrowingStream<Bool, any Error> {
        AsyncThrowingStream { continuation in
            produce(continuation) { () async throws(LocationError) in
                let (ended, endInput) = AsyncStream.makeStream(of: Never.self)
                continuation.onTermination = { _ in endInput.finish() }
                let match = SignalMatch(
                    path: Self.managerPath, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")
                let subscription = try await self.subscribeToService(match) { message in
                    let arguments = message.arguments()
                    guard arguments.count == 3, arguments[0].string == Self.geoClueManager,
                        let level = arguments[1].stringKeyedEntries?["AvailableAccuracyLevel"]?.uint32
                    else { return }
                    continuation.yield(level > 0)
                }
                defer { self.connection.unsubscribe(subscription) }
                let level =
                    try await self.get(Self.managerPath, Self.geoClueManager, "AvailableAccuracyLevel").uint32 ?? 0
                continuation.yield(level > 0)
                for await _ in ended {}
            }
        }
    }

    /// The last known location, however old (marked ``Position/isStale``), or nil before any fix; it starts no
    /// provider. Whereabouts only.
    public func lastLocation() async throws(LocationError) -> Position? {
        guard try await isWhereabouts() else { throw .unsupported("the last known location") }
        let client = try await makeClient(accuracy: .exact)
        defer { deleteClient(client) }
        guard let path = try await get(client, Self.client, "LastLocation").objectPath, path != .root else {
            return nil
        }
        return try await read(path)
    }

    /// Produces a sequence with `work`, one task that runs until the sequence ends and then lets go of what it
    /// holds; an error it throws ends the sequence. The manager keeps the task, for ``endStreams()`` and for the
    /// bus going away.
    func produce<Element>(
        _ continuation: AsyncThrowingStream<Element, any Error>.Continuation,
        _ work: @escaping @BusActor () async throws(LocationError) -> Void
    ) {
        let number = nextStreamNumber
        nextStreamNumber += 1
        let task = Task { @BusActor in
            do throws(LocationError) {
                try await work()
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
            self.streams[number] = nil
        }
        streams[number] = RunningStream(finish: { error in continuation.finish(throwing: error) }, task: task)
    }
}

/// The first `LocationUpdated` of a client, or nothing when the time runs out.
@BusActor
final class FirstSignal {
    private var result: ObjectPath??
    private var waiter: CheckedContinuation<ObjectPath?, Never>?

    func deliver(_ path: ObjectPath) { finish(path) }

    func expire() { finish(nil) }

    private func finish(_ value: ObjectPath?) {
        guard result == nil else { return }
        result = .some(value)
        waiter?.resume(returning: value)
        waiter = nil
    }

    func wait() async -> ObjectPath? {
        if let result { return result }
        return await withCheckedContinuation { waiter = $0 }
    }
}

/// A sequence a ``LocationManager`` produces: how to end it, and the task producing it.
private struct RunningStream {
    let finish: @BusActor (LocationError?) -> Void
    let task: Task<Void, Never>
}

/// What the service said about a stream's fixes.
private enum LocationEvent: Sendable {
    /// `LocationUpdated`: a new Location object.
    case updated(ObjectPath)
    /// `PropertiesChanged` of a Location object: a fix completed in place.
    case refreshed(ObjectPath)
}
