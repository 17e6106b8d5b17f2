import DBus
import Loop

/// A circle the service watches for the app (`io.github.whereabouts1.Client.AddRegion`): kept by the service for
/// the app and the user, across the app's runs and the service's restarts, until removed or expired.
///
/// Times are milliseconds since the Unix epoch, as ``Position/timestamp`` is.
public struct Region: Sendable, Equatable {
    /// The app's name for it, 1 to 255 bytes of UTF-8; adding a region of an id the app has replaces it.
    public var id: String
    /// Degrees north of the centre (WGS84).
    public var latitude: Double
    /// Degrees east of the centre (WGS84).
    public var longitude: Double
    /// Metres; the service watches at least 100 (``LocationManager/addRegion(_:)`` returns the radius watched).
    public var radius: Double
    /// Whether entering it is reported (`notify-entry`). The first decision after adding it is reported anyway.
    public var notifyOnEntry: Bool
    /// Whether leaving it is reported (`notify-exit`).
    public var notifyOnExit: Bool
    /// Staying inside this long since the entry is reported as ``RegionState/dwelling`` (`dwell`, whole seconds,
    /// rounded up); nil never.
    public var dwell: Duration?
    /// When the service removes it, in milliseconds since the Unix epoch (`expires`, whole seconds, rounded up),
    /// reporting ``RegionNotice/removed(ids:reason:)``; nil never.
    public var expires: Int64?

    public init(
        id: String, latitude: Double, longitude: Double, radius: Double, notifyOnEntry: Bool = true,
        notifyOnExit: Bool = true, dwell: Duration? = nil, expires: Int64? = nil
    ) {
        self.id = id
        self.latitude = latitude
        self.longitude = longitude
        self.radius = radius
        self.notifyOnEntry = notifyOnEntry
        self.notifyOnExit = notifyOnExit
        self.dwell = dwell
        self.expires = expires
    }
}

/// Where the device is relative to a region, as `RegionChanged` and `ListRegions` name it.
public enum RegionState: String, Sendable {
    /// Entered.
    case inside
    /// Left, or never entered.
    case outside
    /// Inside for the region's ``Region/dwell`` since the entry.
    case dwelling
    /// Not decided: no fix decided it yet (within a minute of adding it), or no provider that can decide is
    /// available any more. Also a state this library does not know.
    case unknown
}

/// A region as the service watches it (`io.github.whereabouts1.Client.ListRegions`).
public struct RegionStatus: Sendable, Equatable {
    /// The region, its ``Region/radius`` the one watched.
    public var region: Region
    /// Its state now.
    public var state: RegionState
    /// Milliseconds since the Unix epoch of the fix that decided ``state``; nil before any.
    public var since: Int64?

    public init(region: Region, state: RegionState, since: Int64? = nil) {
        self.region = region
        self.state = state
        self.since = since
    }
}

/// A change of a region's state (`io.github.whereabouts1.Client.RegionChanged`, or one of
/// `PendingRegionEvents`), with the fix that decided it.
public struct RegionEvent: Sendable, Equatable {
    /// The region's ``Region/id``.
    public var id: String
    /// Its new state.
    public var state: RegionState
    /// Milliseconds since the Unix epoch of the fix that decided it.
    public var timestamp: Int64
    /// Degrees north of the fix (coarsened for an approximate grant); NaN for ``RegionState/unknown``.
    public var latitude: Double
    /// Degrees east of the fix; NaN for ``RegionState/unknown``.
    public var longitude: Double
    /// The fix's accuracy radius, metres at 95% confidence.
    public var accuracy: Double
    /// True when it happened while no client of the app existed and was kept for it (`PendingRegionEvents`).
    public var wasPending: Bool

    public init(
        id: String, state: RegionState, timestamp: Int64, latitude: Double, longitude: Double, accuracy: Double,
        wasPending: Bool = false
    ) {
        self.id = id
        self.state = state
        self.timestamp = timestamp
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        self.wasPending = wasPending
    }
}

/// What ``LocationManager/regionEvents()`` delivers: a region's change of state, or regions the service stopped
/// watching by itself.
public enum RegionNotice: Sendable, Equatable {
    /// `RegionChanged`, or one of `PendingRegionEvents` (``RegionEvent/wasPending``).
    case changed(RegionEvent)
    /// `RegionsRemoved`: the service removed these regions of the app, for `reason`: "expired" (their
    /// ``Region/expires`` came) or "authorisation-revoked" (the app's grant was revoked, which removes all its
    /// regions). ``LocationManager/removeRegion(_:)`` reports none.
    case removed(ids: [String], reason: String)
}

extension LocationManager {
    /// Watches `region` for the app, replacing its region of the same id (`AddRegion`), and returns the radius
    /// watched: the region's, raised to the service's smallest. Needs the app's "always" authorisation
    /// (``LocationError/permissionDenied(_:)`` without it). Whereabouts only.
    public func addRegion(_ region: Region) async throws(LocationError) -> Double {
        guard try await isWhereabouts() else { throw .unsupported("regions") }
        let arguments = try region.addRegionArguments()
        let client = try await makeClient(accuracy: .exact)
        defer { deleteClient(client) }
        let reply = try await call(client, Self.client, "AddRegion", arguments)
        guard let radius = reply.first?.double else { throw .other(name: "", message: "AddRegion returned no radius") }
        return radius
    }

    /// Stops watching the app's region `id` (`RemoveRegion`); ``LocationError/invalidArgument(_:)`` when the app
    /// has none of that id. Whereabouts only.
    public func removeRegion(_ id: String) async throws(LocationError) {
        guard try await isWhereabouts() else { throw .unsupported("regions") }
        let client = try await makeClient(accuracy: .exact)
        defer { deleteClient(client) }
        _ = try await call(client, Self.client, "RemoveRegion", [.string(id)])
    }

    /// The app's regions for this user, sorted by id, with their states (`ListRegions`). Whereabouts only.
    public func regions() async throws(LocationError) -> [RegionStatus] {
        guard try await isWhereabouts() else { throw .unsupported("regions") }
        let client = try await makeClient(accuracy: .exact)
        defer { deleteClient(client) }
        let reply = try await call(client, Self.client, "ListRegions")
        return (reply.first?.elements ?? []).compactMap(RegionStatus.init(listed:))
    }

    /// The changes of the app's regions: first those that happened while no client of the app existed
    /// (`PendingRegionEvents`, which empties them; ``RegionEvent/wasPending`` true), then each `RegionChanged` and
    /// `RegionsRemoved` as the service sends them, until the sequence is dropped or its task cancelled. Whereabouts
    /// only.
    ///
    /// The service sends these signals only to the connections of the app's clients, so the sequence keeps a
    /// client of its own while it runs; it follows the signals before the client is the app's, so that no change
    /// falls between the pending ones and the signals.
    public func regionEvents() -> AsyncThrowingStream<RegionNotice, any Error> {
        AsyncThrowingStream { continuation in
            produce(continuation) { () async throws(LocationError) in
                let (notices, noticeInput) = AsyncStream.makeStream(of: RegionNotice.self)
                continuation.onTermination = { _ in noticeInput.finish() }
                guard try await self.isWhereabouts() else { throw .unsupported("regions") }
                let client = try await self.createClient()
                var subscriptions: [SignalSubscription] = []
                defer { self.end(client, subscriptions) }
                subscriptions.append(
                    try await self.subscribeToService(
                        SignalMatch(path: client, interface: Self.client, member: "RegionChanged")
                    ) { message in
                        guard let event = RegionEvent(message.arguments(), wasPending: false) else { return }
                        noticeInput.yield(.changed(event))
                    })
                subscriptions.append(
                    try await self.subscribeToService(
                        SignalMatch(path: client, interface: Self.client, member: "RegionsRemoved")
                    ) { message in
                        guard let notice = RegionNotice(removed: message.arguments()) else { return }
                        noticeInput.yield(notice)
                    })
                try await self.configure(client, accuracy: .exact)
                let pending = try await self.call(client, Self.client, "PendingRegionEvents")
                for row in pending.first?.elements ?? [] {
                    guard let event = RegionEvent(row.fields ?? [], wasPending: true) else { continue }
                    continuation.yield(.changed(event))
                }
                for await notice in notices { continuation.yield(notice) }
            }
        }
    }
}

// MARK: The contract's encoding

extension Region {
    /// `AddRegion`'s arguments: id, latitude, longitude, radius and the options (`notify-entry`, `notify-exit`,
    /// and `dwell` and `expires` when set). A dwell or an expiry that the bus cannot carry (not after the start
    /// of its first second, where 0 means never) is ``LocationError/invalidArgument(_:)``.
    func addRegionArguments() throws(LocationError) -> [DBusValue] {
        var options: [String: DBusValue] = [
            "notify-entry": .boolean(notifyOnEntry), "notify-exit": .boolean(notifyOnExit),
        ]
        if let dwell {
            guard dwell > .zero else { throw .invalidArgument("dwell: not a positive duration") }
            let (seconds, attoseconds) = dwell.components
            options["dwell"] = .uint32(UInt32(clamping: attoseconds > 0 ? seconds + 1 : seconds))
        }
        if let expires {
            guard expires > 0 else { throw .invalidArgument("expires: before the Unix epoch") }
            let seconds = expires / 1000 + (expires % 1000 > 0 ? 1 : 0)
            options["expires"] = .uint64(UInt64(seconds))
        }
        return [.string(id), .double(latitude), .double(longitude), .double(radius), .vardict(options)]
    }
}

extension RegionStatus {
    /// One row of `ListRegions` (`(sddda{sv})`); nil for a row of another shape. An option missing from the row
    /// reads as its default.
    init?(listed row: DBusValue) {
        guard let fields = row.fields, fields.count == 5, let id = fields[0].string, let latitude = fields[1].double,
            let longitude = fields[2].double, let radius = fields[3].double,
            let details = fields[4].stringKeyedEntries
        else { return nil }
        func detail(_ key: String) -> DBusValue? { details[key]?.unwrapped }
        let dwell = detail("dwell")?.uint32 ?? 0
        let expiry = detail("expires")?.uint64 ?? 0
        let expires: Int64? =
            expiry == 0 ? nil : expiry > UInt64(Int64.max / 1000) ? .max : Int64(expiry) * 1000
        let since = detail("since")?.uint64 ?? 0
        let region = Region(
            id: id, latitude: latitude, longitude: longitude, radius: radius,
            notifyOnEntry: detail("notify-entry")?.bool ?? true, notifyOnExit: detail("notify-exit")?.bool ?? true,
            dwell: dwell > 0 ? .seconds(dwell) : nil,
            expires: expires)
        self.init(
            region: region, state: RegionState(rawValue: detail("state")?.string ?? "") ?? .unknown,
            since: since > 0 ? Int64(clamping: since) : nil)
    }
}

extension RegionEvent {
    /// `RegionChanged`'s arguments, or one entry of `PendingRegionEvents` (`sstddd`: id, state, timestamp,
    /// latitude, longitude, accuracy); nil for values of another shape.
    init?(_ values: [DBusValue], wasPending: Bool) {
        guard values.count == 6, let id = values[0].string, let state = values[1].string,
            let timestamp = values[2].uint64, let latitude = values[3].double, let longitude = values[4].double,
            let accuracy = values[5].double
        else { return nil }
        self.init(
            id: id, state: RegionState(rawValue: state) ?? .unknown, timestamp: Int64(clamping: timestamp),
            latitude: latitude, longitude: longitude, accuracy: accuracy, wasPending: wasPending)
    }
}

extension RegionNotice {
    /// `RegionsRemoved`'s arguments (`as`, `s`: the ids and the reason); nil for values of another shape.
    init?(removed values: [DBusValue]) {
        guard values.count == 2, let ids = values[0].elements?.compactMap(\.string), let reason = values[1].string
        else { return nil }
        self = .removed(ids: ids, reason: reason)
    }
}
