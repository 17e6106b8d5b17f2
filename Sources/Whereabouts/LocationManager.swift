import DBus
import Loop
import WhereaboutsCore

/// GeoClue's accuracy levels, as apps ask for them.
public enum Accuracy: UInt32, Sendable, CaseIterable {
    case country = 1
    case city = 4
    case neighborhood = 5
    case street = 6
    case exact = 8
}

/// Options of a single location request (the seed API's request options, with W3C's maximum age).
public struct RequestOptions: Sendable {
    /// How long to wait for a fix (the seed API's default is 5 s).
    public var timeout: Duration
    /// A fix at most this old may be answered from the cache, without starting a provider.
    public var maximumAge: Duration?
    /// Whether satellite receivers may run (`enableHighAccuracy`).
    public var highAccuracy: Bool
    /// The accuracy level asked for.
    public var accuracy: Accuracy

    public init(
        timeout: Duration = .seconds(5), maximumAge: Duration? = nil, highAccuracy: Bool = true,
        accuracy: Accuracy = .exact
    ) {
        self.timeout = timeout
        self.maximumAge = maximumAge
        self.highAccuracy = highAccuracy
        self.accuracy = accuracy
    }
}

/// How a stream of locations is produced (the seed API's configuration).
public struct MonitoringConfiguration: Sendable {
    /// The accuracy level asked for.
    public var accuracy: Accuracy
    /// Whether satellite receivers may run.
    public var highAccuracy: Bool
    /// Metres the position must move before a new fix is delivered (`minimumUpdateDistanceInMeters`).
    public var minimumUpdateDistance: Double

    public init(accuracy: Accuracy = .exact, highAccuracy: Bool = true, minimumUpdateDistance: Double = 0) {
        self.accuracy = accuracy
        self.highAccuracy = highAccuracy
        self.minimumUpdateDistance = minimumUpdateDistance
    }
}

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

    // MARK: Plumbing

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

    private func subscribe(_ client: ObjectPath, _ handler: @escaping @BusActor (ObjectPath) -> Void)
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

    private func read(_ path: ObjectPath) async throws(LocationError) -> Position {
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
                isSimulated: values["Simulated"]?.bool ?? false, isStale: values["Stale"]?.bool ?? false)
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

    private func get(_ path: ObjectPath, _ interface: String, _ name: String) async throws(LocationError) -> DBusValue {
        try await call(path, "org.freedesktop.DBus.Properties", "Get", [.string(interface), .string(name)]).first?
            .unwrapped ?? .structure([])
    }

    func getAllProperties(_ path: ObjectPath, _ interface: String) async throws(LocationError) -> [String: DBusValue] {
        try await getAll(path, interface)
    }

    private func getAll(_ path: ObjectPath, _ interface: String) async throws(LocationError) -> [String: DBusValue] {
        try await call(path, "org.freedesktop.DBus.Properties", "GetAll", [.string(interface)]).first?
            .stringKeyedEntries ?? [:]
    }

    private func set(_ path: ObjectPath, _ interface: String, _ name: String, _ value: DBusValue)
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

extension LocationError {
    /// Maps a D-Bus error onto the library's cases.
    init(_ error: DBusError) {
        switch error.name {
        case BusNames.Whereabouts.Error.timeout: self = .timeout
        case BusNames.Whereabouts.Error.locationUnavailable: self = .locationUnavailable
        case BusNames.Whereabouts.Error.servicesDisabled: self = .servicesDisabled
        case BusNames.Whereabouts.Error.limitsExceeded: self = .limitsExceeded
        case DBusError.Name.invalidArgs: self = .invalidArgument(error.message)
        case BusNames.Whereabouts.Error.permissionDenied, DBusError.Name.accessDenied:
            self = .permissionDenied(error.message)
        case DBusError.Name.serviceUnknown, DBusError.Name.nameHasNoOwner, DBusError.Name.disconnected,
            DBusError.Name.noReply, "org.freedesktop.DBus.Error.NoServer", "org.freedesktop.DBus.Error.FileNotFound":
            self = .serviceUnavailable(error.message)
        default: self = .other(name: error.name, message: error.message)
        }
    }
}

extension Duration {
    /// Whole milliseconds, saturating.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        return overflow ? (seconds < 0 ? .min : .max) : scaled + attoseconds / 1_000_000_000_000_000
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

/// The service's state, for a status display (`whereabouts status`).
public struct ServiceStatus: Sendable {
    /// One provider: its kind, the level that starts it, whether it can deliver, whether it runs, and what else
    /// it reports (the network providers' last lookup; `io.github.whereabouts1.Manager.Providers`).
    public struct Provider: Sendable {
        public var kind: String
        public var level: UInt32
        public var available: Bool
        public var running: Bool
        /// Texts by name: `backend`, `reason`, `last-outcome`, `last-source`, `last-message`.
        public var texts: [String: String]
        /// Counts by name: `requests`, `submissions`, `cached-answers`, `learned-places`.
        public var counts: [String: UInt32]
        /// Times by name, in Unix milliseconds: `last-lookup`.
        public var times: [String: UInt64]
        /// Flags by name: the compass's `service`, `has-compass` and `claimed`.
        public var flags: [String: Bool] = [:]
    }

    /// `LocationServicesEnabled` (always true on a plain GeoClue).
    public var servicesEnabled: Bool
    /// `AvailableAccuracyLevel`.
    public var availableLevel: UInt32
    /// `InUse`.
    public var inUse: Bool
    /// The providers (empty on a plain GeoClue).
    public var providers: [Provider]
    /// The apps using location now (empty on a plain GeoClue).
    public var activeApps: [String]
    /// False for a plain GeoClue.
    public var isWhereabouts: Bool
    /// `RegionLevel`: the accuracy level the watched regions ask of the providers (0: no region is watched).
    public var regionLevel: UInt32 = 0
    /// `WatchedRegions`: how many regions the service watches, of every app and user.
    public var watchedRegions: UInt32 = 0
    /// Who the service takes this process for (``LocationManager/appIdentity()``); nil on a plain GeoClue.
    public var appIdentity: AppIdentity?
}

/// Who the service takes the calling process for (`io.github.whereabouts1.Client.AppIdentity` and `DesktopHint`).
public struct AppIdentity: Sendable, Equatable {
    /// How the service knows the app.
    public enum Source: String, Sendable {
        /// The Flatpak sandbox the process runs in.
        case flatpak
        /// The snap whose AppArmor label confines the process.
        case snap
        /// The desktop portal, asking on the app's behalf.
        case portal
        /// Only the `DesktopId` the process set: its own word.
        case claimed
    }

    /// How the service knows the app.
    public var source: Source
    /// The app id whose configuration, grants and regions apply.
    public var id: String
    /// The desktop file the process's systemd user unit is named after, shown only, never used to grant.
    public var desktopHint: String?

    /// True when the system vouches for the id (every source but ``Source/claimed``).
    public var isVerified: Bool { source != .claimed }

    /// Reads `flatpak:ID`, `snap:ID`, `portal:ID` or `claimed:ID`.
    init?(_ text: String, desktopHint: String) {
        guard let colon = text.firstIndex(of: ":"), let source = Source(rawValue: String(text[..<colon])) else {
            return nil
        }
        self.source = source
        id = String(text[text.index(after: colon)...])
        self.desktopHint = desktopHint.isEmpty ? nil : desktopHint
    }

    /// `flatpak:ID`, as the service says it.
    public var description: String { "\(source.rawValue):\(id)" }
}

extension LocationManager {
    /// Who the service takes this process for, asking as the app `desktopId` (a sandboxed process is its sandbox's
    /// app whatever it says). Whereabouts only.
    public func appIdentity() async throws(LocationError) -> AppIdentity {
        guard try await isWhereabouts() else { throw .unsupported("app identity") }
        let client = try await makeClient(accuracy: .exact)
        defer { deleteClient(client) }
        let properties = try await getAllProperties(client, Self.client)
        guard let text = properties["AppIdentity"]?.string,
            let identity = AppIdentity(text, desktopHint: properties["DesktopHint"]?.string ?? "")
        else {
            throw .other(name: "", message: "the service named no app identity")
        }
        return identity
    }
}

extension LocationManager {
    /// The Manager's properties, GeoClue's and, on Whereabouts, ours.
    public func status() async throws(LocationError) -> ServiceStatus {
        let geoClue = try await getAllProperties(Self.managerPath, Self.geoClueManager)
        var status = ServiceStatus(
            servicesEnabled: true, availableLevel: geoClue["AvailableAccuracyLevel"]?.uint32 ?? 0,
            inUse: geoClue["InUse"]?.bool ?? false, providers: [], activeApps: [], isWhereabouts: false)
        guard try await isWhereabouts() else { return status }
        let ours = try await getAllProperties(Self.managerPath, Self.manager)
        status.isWhereabouts = true
        status.servicesEnabled = ours["LocationServicesEnabled"]?.bool ?? true
        status.activeApps = ours["ActiveApps"]?.elements?.compactMap(\.string) ?? []
        status.regionLevel = ours["RegionLevel"]?.uint32 ?? 0
        status.watchedRegions = ours["WatchedRegions"]?.uint32 ?? 0
        status.appIdentity = try? await appIdentity()
        status.providers = (ours["Providers"]?.elements ?? []).compactMap { row in
            guard let fields = row.fields, fields.count == 5, let kind = fields[0].string, let level = fields[1].uint32,
                let available = fields[2].bool, let running = fields[3].bool, let details = fields[4].stringKeyedEntries
            else { return nil }
            var provider = ServiceStatus.Provider(
                kind: kind, level: level, available: available, running: running, texts: [:], counts: [:], times: [:])
            for (name, value) in details {
                switch value.unwrapped {
                case .string(let text): provider.texts[name] = text
                case .uint32(let count): provider.counts[name] = count
                case .uint64(let time): provider.times[name] = time
                case .boolean(let flag): provider.flags[name] = flag
                default: continue
                }
            }
            return provider
        }
        return status
    }
}

/// An app's authorisation, as `io.github.whereabouts1.Client.AuthorisationStatus` reports it.
public enum AuthorisationStatus: String, Sendable, CaseIterable {
    case notDetermined, restricted, denied, authorisedWhenInUse, authorisedAlways
}

/// The grant an app asks for.
public enum AuthorisationRequest: String, Sendable {
    case whenInUse = "when-in-use"
    case always
}

extension LocationManager {
    /// The app's authorisation for this user, checked now without asking anyone (Whereabouts only).
    public func authorisationStatus() async throws(LocationError) -> AuthorisationStatus {
        guard try await isWhereabouts() else { throw .unsupported("authorisation status") }
        let client = try await makeClient(accuracy: .exact)
        defer { deleteClient(client) }
        let reply = try await call(client, Self.client, "CheckAuthorisation")
        return AuthorisationStatus(rawValue: reply.first?.string ?? "") ?? .notDetermined
    }

    /// Asks the user, through polkit, for `request`; returns the resulting status. An app that already has it,
    /// or that policy restricts, is not asked (Whereabouts only).
    public func requestAuthorisation(_ request: AuthorisationRequest, approximate: Bool = false)
        async throws(LocationError) -> AuthorisationStatus
    {
        guard try await isWhereabouts() else { throw .unsupported("authorisation requests") }
        let client = try await makeClient(accuracy: .exact)
        defer { deleteClient(client) }
        let options: [String: DBusValue] = approximate ? ["approximate": .boolean(true)] : [:]
        let reply = try await call(
            client, Self.client, "RequestAuthorisation", [.string(request.rawValue), .vardict(options)],
            timeout: Self.promptTimeout)
        return AuthorisationStatus(rawValue: reply.first?.string ?? "") ?? .notDetermined
    }

    /// The app's authorisation now, then each change, for as long as the sequence is iterated
    /// (`io.github.whereabouts1.Client.AuthorisationStatus` and its `PropertiesChanged`, sent to this connection
    /// alone): a grant revoked, a decision made elsewhere. Whereabouts only.
    public func authorisationStatuses() -> AsyncThrowingStream<AuthorisationStatus, any Error> {
        AsyncThrowingStream { continuation in
            produce(continuation) { () async throws(LocationError) in
                let (ended, endInput) = AsyncStream.makeStream(of: Never.self)
                continuation.onTermination = { _ in endInput.finish() }
                guard try await self.isWhereabouts() else { throw .unsupported("authorisation status") }
                let client = try await self.makeClient(accuracy: .exact)
                var subscriptions: [SignalSubscription] = []
                defer { self.end(client, subscriptions) }
                let changes = StatusChanges(continuation)
                subscriptions.append(
                    try await self.subscribeToService(
                        SignalMatch(
                            path: client, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")
                    ) { message in
                        let arguments = message.arguments()
                        guard arguments.count == 3, arguments[0].string == Self.client,
                            let text = arguments[1].stringKeyedEntries?["AuthorisationStatus"]?.string
                        else { return }
                        changes.yield(AuthorisationStatus(rawValue: text) ?? .notDetermined)
                    })
                let reply = try await self.call(client, Self.client, "CheckAuthorisation")
                changes.yield(AuthorisationStatus(rawValue: reply.first?.string ?? "") ?? .notDetermined)
                for await _ in ended {}
            }
        }
    }
}

/// Passes on a status only when it differs from the one passed on before.
@BusActor
final class StatusChanges {
    private let continuation: AsyncThrowingStream<AuthorisationStatus, any Error>.Continuation
    private var last: AuthorisationStatus?

    init(_ continuation: AsyncThrowingStream<AuthorisationStatus, any Error>.Continuation) {
        self.continuation = continuation
    }

    func yield(_ status: AuthorisationStatus) {
        guard status != last else { return }
        last = status
        continuation.yield(status)
    }
}

/// One stored decision, as `ListGrants` reports it.
public struct Grant: Sendable, Equatable {
    public var uid: UInt32
    public var app: String
    /// "always", "when-in-use" or "denied".
    public var decision: String
    public var approximate: Bool
    /// True for a decision about an app the system vouched for (a Flatpak or Snap app, or the desktop portal's),
    /// which no caller merely claiming its id can use.
    public var verified: Bool
}

extension LocationManager {
    /// The stored decisions of this user, or of every user (which needs the management authorisation).
    public func grants(allUsers: Bool = false) async throws(LocationError) -> [Grant] {
        guard try await isWhereabouts() else { throw .unsupported("grants") }
        let reply = try await callManager("ListGrants", [.boolean(allUsers)])
        return (reply.first?.elements ?? []).compactMap { row in
            guard let fields = row.fields, fields.count == 5, let uid = fields[0].uint32, let app = fields[1].string,
                let decision = fields[2].string, let approximate = fields[3].bool, let verified = fields[4].bool
            else { return nil }
            return Grant(uid: uid, app: app, decision: decision, approximate: approximate, verified: verified)
        }
    }

    /// Forgets the decisions of user `uid` about `app`, verified and claimed; another user's needs the management authorisation.
    public func revokeGrant(app: String, uid: UInt32) async throws(LocationError) {
        guard try await isWhereabouts() else { throw .unsupported("grants") }
        _ = try await callManager("RevokeGrant", [.uint32(uid), .string(app)])
    }
}

/// Why a simulation ended (`io.github.whereabouts1.Manager.SimulationEnded`).
public enum SimulationEnd: String, Sendable {
    /// The track played to its end.
    case finished
    /// It was stopped (`StopSimulation`, by its owner or an administrator).
    case stopped
    /// Another simulation took its place.
    case replaced
}

extension LocationManager {
    /// Plays a recorded track (NMEA or GPX text) in the place of every provider, its fixes marked simulated, and
    /// returns when it ends (`io.github.whereabouts1.Manager.Simulate`, then `SimulationEnded`). Cancelling the
    /// task stops it. Needs the management authorisation; Whereabouts only.
    public func simulate(track: String, name: String, speed: Double = 1, loops: Bool = false)
        async throws(LocationError) -> SimulationEnd
    {
        guard try await isWhereabouts() else { throw .unsupported("simulated locations") }
        let ending = SimulationEnding()
        let subscription = try await subscribeToService(
            SignalMatch(path: Self.managerPath, interface: Self.manager, member: "SimulationEnded")
        ) { message in
            ending.finish(SimulationEnd(rawValue: message.arguments().first?.string ?? "") ?? .stopped)
        }
        defer { connection.unsubscribe(subscription) }
        let options: [String: DBusValue] = ["speed": .double(speed), "loop": .boolean(loops), "name": .string(name)]
        _ = try await callManager("Simulate", [.string(track), .vardict(options)])
        return await withTaskCancellationHandler {
            await ending.wait()
        } onCancel: {
            Task { @BusActor in
                _ = try? await self.callManager("StopSimulation", [])
                ending.finish(.stopped)
            }
        }
    }
}

/// The end of a simulation, awaited once.
@BusActor
final class SimulationEnding {
    private var result: SimulationEnd?
    private var waiter: CheckedContinuation<SimulationEnd, Never>?

    func finish(_ end: SimulationEnd) {
        guard result == nil else { return }
        result = end
        waiter?.resume(returning: end)
        waiter = nil
    }

    func wait() async -> SimulationEnd {
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
