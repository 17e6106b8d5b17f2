import DBus
import Loop
import WhereaboutsCore

/// What `io.github.whereabouts1.Manager`'s properties say, and to whom.
extension GeoClueService {
    /// Whose apps `io.github.whereabouts1.Manager.ActiveApps` shows the connection `name`: its own user's, or every
    /// app for root and for a caller polkit grants `io.github.whereabouts1.manage` (asked without user interaction:
    /// reading a property never prompts).
    func activeAppsViewer(for name: String) async throws(DBusError) -> ActiveAppsViewer {
        let uid = try await uid(of: name)
        return try await seesEveryone(name) ? .everyone : .user(uid)
    }

    /// `io.github.whereabouts1.Manager.ActiveApps` as `viewer` sees it, read by the connection `name`: from then on
    /// the connection alone is sent the changes of what it sees.
    func activeApps(seenBy viewer: ActiveAppsViewer, readBy name: String) -> [String] {
        let apps = activity.apps(seenBy: viewer)
        if peers.knownUser(of: name) != nil { activity.follow(name, as: viewer, given: apps) }
        return apps
    }

    /// True when the connection `name` administers the service, and so sees every user's apps and clients: it is
    /// root's, or polkit grants it `io.github.whereabouts1.manage` (asked without user interaction: reading never
    /// prompts).
    func seesEveryone(_ name: String) async throws(DBusError) -> Bool {
        let uid = try await uid(of: name)
        if uid == 0 { return true }
        guard let polkit else { return false }
        // With the session known, polkit's answer is reused while it holds: a listing of the tree asks once.
        let session = await polkitSessionKey(of: name, uid: uid)
        let answer = await polkit.check(
            busName: name, uid: uid, session: session, action: PolkitAction.manage, details: [:], interactive: false,
            timeout: GeoClueService.checkTimeout)
        if case .success(.yes) = answer { return true }
        return false
    }

    /// `io.github.whereabouts1.Manager`'s properties.
    func extendedManagerProperty(_ name: String) -> DBusValue {
        switch name {
        case "LocationServicesEnabled": return .boolean(servicesEnabled)
        case "Simulating": return .boolean(simulation != nil)
        case "RegionLevel": return .uint32(activity.regionDemand?.rawValue ?? 0)
        case "WatchedRegions": return .uint32(UInt32(clamping: regions.monitor.count))
        default:
            let rows = (providerStatus?() ?? []).map { row in
                DBusValue.structure([
                    .string(row.kind), .uint32(row.level.rawValue), .boolean(row.available), .boolean(row.running),
                    .vardict(row.details.mapValues(\.busValue)),
                ])
            }
            return .array(element: "(subba{sv})", rows)
        }
    }
}

extension ProviderDetail {
    /// The detail as the variant `io.github.whereabouts1.Manager.Providers` carries.
    var busValue: DBusValue {
        switch self {
        case .text(let text): .string(text)
        case .count(let count): .uint32(count)
        case .time(let time): .uint64(UInt64(max(0, time.microseconds / 1000)))
        case .flag(let flag): .boolean(flag)
        }
    }
}
