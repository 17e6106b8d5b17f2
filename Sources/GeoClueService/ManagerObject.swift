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
    /// what it may see (``GeoClueService/activeApps(for:)``); every other property at once.
    func read(_ names: [String], interface: String, call: MethodCall) -> PropertyRead {
        var values: [String: DBusValue] = [:]
        for name in names where name != "ActiveApps" { values[name] = property(name, interface: interface) }
        guard interface == Whereabouts.managerInterface, names.contains("ActiveApps") else { return .values(values) }
        return .later { [service] () async throws(DBusError) in
            try service.hold(call)
            values["ActiveApps"] = .strings(try await service.activeApps(for: call.sender))
            return values
        }
    }

    /// `Set` of `io.github.whereabouts1.Manager.LocationServicesEnabled`: needs the management action.
    func setProperty(_ name: String, interface: String, value: DBusValue, call: MethodCall) throws(DBusError) -> Reply {
        guard name == "LocationServicesEnabled", let enabled = value.bool else {
            throw .invalidArgs("Property \"\(name)\" is not writable")
        }
        try service.hold(call)
        service.switchServices(call, enabled: enabled)
        return .later
    }

    /// Every method but `DeleteClient` may answer later, so each call counts against the caller's share of
    /// ``GeoClueService/heldCallLimits`` until it is answered.
    func handle(_ call: MethodCall, interface: String, method: String) throws(DBusError) -> Reply {
        if method != "DeleteClient" { try service.hold(call) }
        switch method {
        case "ListGrants":
            service.listGrants(call, allUsers: call.arguments[0].bool!)
            return .later
        case "RevokeGrant":
            let app = call.arguments[1].string!
            guard !app.isEmpty else { throw .invalidArgs("app must not be empty") }
            service.revokeGrant(call, uid: call.arguments[0].uint32!, app: app)
            return .later
        case "SetStaticLocation":
            return try service.setStaticLocation(call)
        case "ClearStaticLocation":
            return service.clearStaticLocation(call)
        case "Simulate":
            return try service.simulate(call)
        case "StopSimulation":
            return service.stopSimulation(call)
        case "GetClient":
            return clientPath(call, reuse: true)
        case "CreateClient":
            return clientPath(call, reuse: false)
        case "DeleteClient":
            service.deleteClient(at: call.arguments[0].objectPath!, requestedBy: call.sender)
            return .values([])
        default:
            return try addAgent(call)
        }
    }

    /// `GetClient` and `CreateClient`: answered once the caller's Unix user is known (asked of the bus once per
    /// connection), which the per-user limit needs.
    private func clientPath(_ call: MethodCall, reuse: Bool) -> Reply {
        BusActor.task { [self] in
            do throws(DBusError) {
                let uid = try await service.uid(of: call.sender)
                call.reply([.objectPath(try service.client(for: call.sender, uid: uid, reuse: reuse).path)])
            } catch {
                call.fail(error)
            }
        }
        return .later
    }

    /// `AddAgent`: registers the caller as the agent for its user, if its id is in `[agent] whitelist` and the
    /// user has no other live agent (``GeoClueService/registerAgent(busName:id:uid:)``).
    private func addAgent(_ call: MethodCall) throws(DBusError) -> Reply {
        let id = call.arguments[0].string!
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
