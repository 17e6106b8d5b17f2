import DBus
import Loop
import WhereaboutsCore

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
        /// Counts by name: `requests`, `submissions`, `cached-answers`, `learned-places`, `disputed-answers`,
        /// `moving-networks-left-out`.
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

extension LocationManager {
    /// The Manager's properties, GeoClue's and, on Whereabouts, ours.
    public func status() async throws(LocationError) -> ServiceStatus {
        let geoClue = try await getAll(Self.managerPath, Self.geoClueManager)
        var status = ServiceStatus(
            servicesEnabled: true, availableLevel: geoClue["AvailableAccuracyLevel"]?.uint32 ?? 0,
            inUse: geoClue["InUse"]?.bool ?? false, providers: [], activeApps: [], isWhereabouts: false)
        guard try await isWhereabouts() else { return status }
        let ours = try await getAll(Self.managerPath, Self.manager)
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
