import DBus
import Loop
import WhereaboutsCore

/// `org.freedesktop.GeoClue2.Manager` and `io.github.whereabouts1.Manager` at `/org/freedesktop/GeoClue2/Manager`.
@BusActor
final class ManagerObject: ExportedObject {
    private unowned let service: GeoClueService

    init(service: GeoClueService) { self.service = service }

    var interfaces: [InterfaceDescription] { [GeoClue.manager, Whereabouts.manager] }

    func property(_ name: String, interface: String) -> DBusValue {
        if interface == Whereabouts.managerInterface { return service.extendedManagerProperty(name) }
        return name == "InUse" ? .boolean(service.activity.inUse) : .uint32(service.availableLevel.rawValue)
    }

    /// `Get` and `GetAll`: `io.github.whereabouts1.Manager.ActiveApps` is answered once the caller is known, with
    /// what it may see (``GeoClueService/activeAppsViewer(for:)``), listed in its turn; every other property at once.
    func read(_ names: [String], interface: String, call: MethodCall) -> PropertyRead {
        var values: [String: DBusValue] = [:]
        for name in names where name != "ActiveApps" { values[name] = property(name, interface: interface) }
        guard interface == Whereabouts.managerInterface, names.contains("ActiveApps") else { return .values(values) }
        return .later { [service] () async throws(DBusError) in
            try service.hold(call)
            let viewer = try await service.activeAppsViewer(for: call.sender)
            return {
                values["ActiveApps"] = .strings(service.activeApps(seenBy: viewer, readBy: call.sender))
                return values
            }
        }
    }

    /// `Set` of `io.github.whereabouts1.Manager.LocationServicesEnabled`: needs the management action.
    func setProperty(_ name: String, interface: String, value: DBusValue, call: MethodCall) throws(DBusError) -> Reply {
        guard name == "LocationServicesEnabled", let enabled = value.bool else {
            throw .invalidArgs("Property “\(name)” is not writable")
        }
        try service.hold(call)
        service.switchServices(call, enabled: enabled)
        return .later
    }

    /// Parsed first (``ManagerCall``); every method but `DeleteClient` may answer later, so each call then counts
    /// against the caller's share of ``GeoClueService/heldCallLimits`` until it is answered.
    func handle(_ call: MethodCall, interface: String, method: String) throws(DBusError) -> Reply {
        let parsed = try ManagerCall(method: method, arguments: call.arguments)
        if !parsed.isAnsweredAtOnce { try service.hold(call) }
        switch parsed {
        case .client(let reuse): return clientPath(call, reuse: reuse)
        case .deleteClient(let path):
            service.deleteClient(at: path, requestedBy: call.sender)
            return .values([])
        case .addAgent(let id): return try addAgent(call, id: id)
        case .listGrants(let allUsers):
            service.listGrants(call, allUsers: allUsers)
            return .later
        case .revokeGrant(let uid, let app):
            service.revokeGrant(call, uid: uid, app: app)
            return .later
        case .setStaticLocation(let location): return service.setStaticLocation(location, call)
        case .clearStaticLocation: return service.clearStaticLocation(call)
        case .simulate(let request): return try service.simulate(request, call)
        case .stopSimulation: return service.stopSimulation(call)
        case .getHistory(let allUsers, let since):
            service.getHistory(call, allUsers: allUsers, since: since)
            return .later
        case .clearHistory(let uid):
            service.clearHistory(call, uid: uid)
            return .later
        }
    }

    /// `GetClient` and `CreateClient`: answered once the caller's Unix user is known (asked of the bus once per
    /// connection), which the per-user limit needs.
    /// A burst of apps each on a new connection waits for the bus's answers all at once: each waits as a closure,
    /// not a task (a task's frames cost about 3 KiB, and the holes they leave stay in the heap).
    private func clientPath(_ call: MethodCall, reuse: Bool) -> Reply {
        service.withUID(of: call.sender) { [service] uid in
            do throws(DBusError) {
                call.reply([.objectPath(try service.client(for: call.sender, uid: try uid.get(), reuse: reuse).path)])
            } catch {
                call.fail(error)
            }
        }
        return .later
    }

    /// `AddAgent`: registers the caller as the agent for its user, if its id is in `[agent] whitelist` and the
    /// user has no other live agent (``GeoClueService/registerAgent(busName:id:uid:)``).
    private func addAgent(_ call: MethodCall, id: String) throws(DBusError) -> Reply {
        guard service.configuration.agentWhitelist.contains(id) else {
            throw .accessDenied("\(id) not allowed to act as agent")
        }
        BusActor.task { [self] in
            do throws(DBusError) {
                let uid = try await service.uid(of: call.sender)
                try await service.registerAgent(busName: call.sender, id: id, uid: uid)
                call.reply()
            } catch {
                call.fail(error)
            }
        }
        return .later
    }
}
