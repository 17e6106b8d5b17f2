import DBus
import Loop
import LoopScheduling
import WhereaboutsCore

/// One application's client: `org.freedesktop.GeoClue2.Client` and `io.github.whereabouts1.Client` at
/// `/org/freedesktop/GeoClue2/Client/N`.
///
/// An adapter: its life (started, held, waiting requests, the update filter, its timers) is the core's
/// ``ClientLife``; this object maps calls and properties to its events, and its effects to messages, replies,
/// Location objects and timers. Its admission is in `ClientAdmission.swift`.
///
/// It answers only the connection that created it. Its property changes and signals go to that connection alone
/// (GeoClue broadcasts the property changes, which leaks coordinates to every peer). `PropertiesChanged` of
/// Whereabouts' own interfaces (`io.github.whereabouts1.Client`, and `io.github.whereabouts1.Location` of its
/// Location objects) is sent only once the owner has used them: called one of their methods, or read or written one
/// of their properties. A GeoClue client, which knows only GeoClue's interfaces, holds no value of theirs to keep
/// current, and is spared a message for every change of them; it gets every `PropertiesChanged` of GeoClue's
/// interfaces as before. Signals (`AvailabilityChanged`, `UpdatesTimedOut`) are sent as ever.
@BusActor
final class ClientObject: ExportedObject {
    typealias Life = ClientLife<DBusError>

    /// The longest `DesktopId` accepted, in bytes: a desktop file name cannot be longer.
    static let maximumDesktopIdLength = 255
    /// `RequestLocation`'s time limit when the options give none.
    static let defaultRequestTimeout: Duration = .seconds(30)

    let id: UInt32
    let owner: String
    unowned let service: GeoClueService

    /// GeoClue's `DesktopId`, as the owner wrote it.
    private(set) var desktopId: String?
    /// The client's life: what it is doing, and what it does next.
    private(set) var life: Life
    /// The level the user's agent allowed this app with `AuthorizeApp` for the current start, if it was asked.
    var agentAllowance: AccuracyLevel?
    /// The owner's Unix user, once known.
    var uid: UInt32?
    var authorisation = Authorisation(status: .notDetermined, approximate: false)
    /// The `Start` whose admission runs.
    private var runningStart: MethodCall?
    /// The `RequestLocation` calls not answered yet, by number.
    private var requests: [RequestID: MethodCall] = [:]
    private var lastRequestNumber: UInt64 = 0
    private var armedTimers: [ClientTimer: ScheduledTimer] = [:]
    private var streamed = ObjectSet(.location)
    private var answers = ObjectSet(.request)
    private var lastKnown: LocationObject?
    /// True once the owner has used Whereabouts' own interfaces; until then their `PropertiesChanged` is not sent.
    private var usesWhereaboutsInterfaces = false
    /// The property changes of the event being carried out, announced once it is done (``apply(_:answering:)``).
    private var changesInEvent: ClientPropertyChanges?

    init(id: UInt32, owner: String, service: GeoClueService) {
        self.id = id
        self.owner = owner
        self.service = service
        life = Life(available: service.availableLevel != .none, clock: service.clock)
        streamed.whenDue = expiry(of: .location)
        answers.whenDue = expiry(of: .request)
    }

    var interfaces: [InterfaceDescription] { [GeoClue.client, Whereabouts.client] }

    /// `/org/freedesktop/GeoClue2/Client/N`, made when asked: the client is found by its number (``ClientTree``).
    var path: ObjectPath { ObjectPath(trusted: "\(GeoClue.clientRoot.rawValue)/\(id)") }

    /// The app the client's last admission decided about; it stands while the client is served, whatever
    /// `DesktopId` becomes meanwhile (GeoClue reads it at `Start` only).
    var admittedApp: ClientApp?

    /// The app the client is served as: while it is served, the one admitted; otherwise the one its owner's identity
    /// and `DesktopId` name now, once the identity is known (``servedApp(claiming:)`` reads it). Revocations,
    /// re-checks, `ActiveApps` and the regions' signals go by it.
    var app: ClientApp? {
        if isServing, let admittedApp { return admittedApp }
        return service.knownIdentity(of: owner).flatMap { ClientApp(caller: $0, desktopId: desktopId) }
    }

    /// Fails as GeoClue does when no app is named: the owner set no `DesktopId` and is not known to be sandboxed
    /// (a sandbox names its app itself); with why its identity could not be read, when it could not.
    func requireAppNamed() throws(DBusError) {
        guard desktopId == nil, app == nil else { return }
        throw service.identityFailure(of: owner) ?? .accessDenied("'DesktopId' property must be set")
    }

    /// GeoClue's `Active`.
    var active: Bool { life.active }
    /// True while the client needs fixes: started, or waiting for a single one.
    var isServing: Bool { life.isServing }
    /// True once a fix has been served since the last `Start`.
    var hasFixSinceStart: Bool { life.hasFixSinceStart }
    /// The level the providers must serve for this client.
    var demandedLevel: AccuracyLevel { life.demandedLevel }

    /// The `Location` property: `/` until the first fix is signalled.
    var locationPath: ObjectPath { streamed.currentPath ?? .root }

    func checkAccess(sender: String) -> DBusError? {
        sender == owner ? nil : .accessDenied("Access denied")
    }

    /// A property's value for `Get` and `GetAll`, which only the owner may call: a read of ours marks the owner
    /// as using Whereabouts' interfaces.
    func property(_ name: String, interface: String) -> DBusValue {
        if interface == Whereabouts.clientInterface { usesWhereaboutsInterfaces = true }
        return switch name {
        case "Location": .objectPath(locationPath)
        case "DistanceThreshold": .uint32(life.thresholds.distance)
        case "TimeThreshold": .uint32(life.thresholds.time)
        case "DesktopId": .string(desktopId ?? "")
        case "AppIdentity": .string(app?.description ?? "")
        case "DesktopHint": .string(service.knownIdentity(of: owner)?.desktopHint ?? "")
        case "RequestedAccuracyLevel": .uint32(life.requestedLevel)
        case "AuthorisationStatus": .string(authorisation.status.rawValue)
        case "Approximate": .boolean(authorisation.approximate)
        case "Available": .boolean(life.available)
        case "LastLocation": .objectPath(lastKnownPath())
        case "HighAccuracy": .boolean(life.highAccuracy)
        case "MinimumUpdateDistance": .double(life.minimumUpdateDistance)
        case "MonitoringTimeout": .uint32(life.monitoringTimeout)
        case "Satellites": SkyBroadcast.value(of: service.sky.satellites)
        default: .boolean(life.active)
        }
    }

    /// `io.github.whereabouts1.Client.Satellites` is refused, as another's client is, unless the client
    /// ``seesSatellites``; `GetAll` leaves it out then.
    func readRefusal(of name: String, interface: String) -> DBusError? {
        interface == Whereabouts.clientInterface && name == "Satellites" && !seesSatellites
            ? .accessDenied("Access denied") : nil
    }

    /// True while the client may see the satellites: started, served and shown at exact level.
    var seesSatellites: Bool { life.active && life.servedLevel == .exact && life.shownLevel == .exact }

    /// `Set` on the writable properties of both client interfaces.
    ///
    /// GeoClue's thresholds take effect at once; the requested level is read at the next `Start`, as in GeoClue.
    func setProperty(_ name: String, interface: String, value: DBusValue, sender: String) throws(DBusError) {
        if interface == Whereabouts.clientInterface { usesWhereaboutsInterfaces = true }
        // As GeoClue's skeleton, a write that changes nothing is not announced (a first DesktopId, even "", is).
        let before = name == "DesktopId" ? desktopId.map(DBusValue.string) : property(name, interface: interface)
        switch name {
        case "DistanceThreshold": apply(.set(.distanceThreshold(value.uint32!)))
        case "TimeThreshold": apply(.set(.timeThreshold(value.uint32!)))
        case "RequestedAccuracyLevel": apply(.set(.requestedLevel(value.uint32!)))
        case "DesktopId":
            let text = value.string!
            guard text.utf8.count <= ClientObject.maximumDesktopIdLength else {
                throw .invalidArgs(
                    "DesktopId is \(text.utf8.count) bytes long; at most \(ClientObject.maximumDesktopIdLength) are allowed"
                )
            }
            let identity = app
            desktopId = text
            if isServing { service.recount(self) }
            if app != identity {
                emitChanged(
                    ["AppIdentity": property("AppIdentity", interface: "")], interface: Whereabouts.clientInterface)
            }
        case "HighAccuracy": apply(.set(.highAccuracy(value.bool!)))
        case "MinimumUpdateDistance":
            let metres = value.double!
            guard metres.isFinite, metres >= 0 else {
                throw .invalidArgs("MinimumUpdateDistance must be a finite number of metres ≥ 0")
            }
            apply(.set(.minimumUpdateDistance(metres)))
        case "MonitoringTimeout": apply(.set(.monitoringTimeout(value.uint32!)))
        default: throw .invalidArgs("Property “\(name)” is not writable")
        }
        let after = property(name, interface: interface)
        guard after != before else { return }
        emitChanged([name: after], interface: interface)
    }

    /// `RequestLocation`, `RequestAuthorisation` and `CheckAuthorisation` answer later, so each call counts against
    /// the caller's share of ``GeoClueService/heldCallLimits`` until it is answered; `Start` does not (a client has
    /// at most one in progress), nor `Stop`.
    func handle(_ call: MethodCall, interface: String, method: String) throws(DBusError) -> Reply {
        if interface == Whereabouts.clientInterface { usesWhereaboutsInterfaces = true }
        if method != "Start" && method != "Stop" { try service.hold(call) }
        switch method {
        case "Start":
            try requireAppNamed()
            apply(.start, answering: call)
            return .later
        case "RequestLocation": return try requestLocation(call)
        case "RequestAuthorisation": return try requestAuthorisation(call)
        case "CheckAuthorisation": return try checkAuthorisation(call)
        case "AddRegion": return try addRegion(call)
        case "RemoveRegion": return try removeRegion(call)
        case "ListRegions": return try listRegions(call)
        case "PendingRegionEvents": return try pendingRegionEvents(call)
        default:
            agentAllowance = nil
            apply(.stop)
            admittedApp = nil
            return .values([])
        }
    }

    /// `RequestLocation(a{sv} options) → o`: one fix, as a Location object under `…/Request/`.
    ///
    /// Options: `timeout` (u, milliseconds; default 30 000), `maximum-age` (u, milliseconds: a fix that recent is
    /// answered at once without starting any provider), `high-accuracy` (b). No fix in time fails with
    /// `io.github.whereabouts1.Error.Timeout`; the providers going away while it waits with
    /// `…Error.LocationUnavailable`; a refused app with `…Error.PermissionDenied`.
    private func requestLocation(_ call: MethodCall) throws(DBusError) -> Reply {
        let options = call.arguments[0].stringKeyedEntries ?? [:]
        var timeout = ClientObject.defaultRequestTimeout
        var maximumAge: Duration?
        var wantsHighAccuracy: Bool?
        for (key, value) in options {
            switch (key, value) {
            case ("timeout", .uint32(let milliseconds)): timeout = .milliseconds(Int(max(1, milliseconds)))
            case ("maximum-age", .uint32(let milliseconds)): maximumAge = .milliseconds(Int(milliseconds))
            case ("high-accuracy", .boolean(let wanted)): wantsHighAccuracy = wanted
            default:
                throw .invalidArgs(
                    "unknown or mistyped option '\(key)' (\(value.signature)); known: timeout u, maximum-age u, high-accuracy b"
                )
            }
        }
        try requireAppNamed()
        lastRequestNumber += 1
        let request = RequestID(lastRequestNumber)
        requests[request] = call
        apply(.requestLocation(request, timeout: timeout, maximumAge: maximumAge, highAccuracy: wantsHighAccuracy))
        return .later
    }

    // MARK: Events and effects

    /// Hands `event` to the client's life and carries out what follows; `call` is the `Start` the event is about,
    /// when it is a `Start`. The property changes it makes are announced together once it is done
    /// (``ClientPropertyChanges``); an event handed over meanwhile is part of it.
    func apply(_ event: Life.Event, answering call: MethodCall? = nil) {
        let outermost = changesInEvent == nil
        if outermost { changesInEvent = ClientPropertyChanges() }
        for effect in life.handle(event) { perform(effect, call: call) }
        guard outermost, let changes = changesInEvent else { return }
        changesInEvent = nil
        announce(changes)
    }

    /// Notes a change with the others of the event being carried out: effects are performed only within
    /// ``apply(_:answering:)``, which holds them and announces them.
    private func changed(_ note: (inout ClientPropertyChanges) -> Void) {
        if changesInEvent != nil { note(&changesInEvent!) }
    }

    private func announce(_ changes: ClientPropertyChanges) {
        if let values = changes.geoClueValues { emitChanged(values, interface: GeoClue.clientInterface) }
        if let values = changes.whereaboutsValues { emitChanged(values, interface: Whereabouts.clientInterface) }
    }

    private func perform(_ effect: Life.Effect, call: MethodCall?) {
        switch effect {
        case .admit(let purpose):
            if purpose == .start { runningStart = call }
            admit(purpose)
        case .answerStart(let failure):
            guard let start = call ?? runningStart else { return }
            if start === runningStart { runningStart = nil }
            guard let failure else {
                service.logger.info(
                    "\(path) ('\(app?.description ?? "")', UID \(uid.map(String.init) ?? "?")) started at level \(life.servedLevel.rawValue)"
                )
                start.reply()
                return
            }
            start.fail(startError(failure))
        case .answerRequests(let ids, let fix):
            service.history.served(id, from: fix.provider)
            let answerPath = answers.add(fix, under: self, in: service).path
            for id in ids { requests.removeValue(forKey: id)?.reply([.objectPath(answerPath)]) }
        case .failRequests(let ids, let failure):
            let error = requestError(failure)
            for id in ids { requests.removeValue(forKey: id)?.fail(error) }
        case .activeChanged(let active):
            changed { $0.active(from: !active, to: active) }
        case .availableChanged(let available):
            changed { $0.available(from: !available, to: available) }
        case .availabilitySignalled(let available, let reason):
            service.connection.emitSignal(
                path: path, interface: Whereabouts.clientInterface, member: "AvailabilityChanged",
                arguments: [.boolean(available), .string(reason)], destination: owner)
        case .signal(let fix):
            service.history.served(id, from: fix.provider)
            signal(fix)
        case .refresh(let fix):
            service.history.served(id, from: fix.provider)
            if let current = streamed.current { refresh(current, with: fix) }
        case .updatesTimedOut:
            service.connection.emitSignal(
                path: path, interface: Whereabouts.clientInterface, member: "UpdatesTimedOut", arguments: [],
                destination: owner)
        case .arm(let timer, let delay):
            armedTimers[timer] = service.timers.scheduleOnBus(after: delay) { [weak self] in
                self?.apply(.timerFired(timer))
            }
        case .disarm(let timer):
            if let armed = armedTimers.removeValue(forKey: timer) { service.timers.cancelTimer(armed) }
        case .recount: service.recount(self)
        case .activityChanged: service.clientActivityChanged(self)
        case .servedLevelChanged(let level):
            service.logger.info("\(path) ('\(app?.description ?? "")') is now served at level \(level.rawValue)")
        case .staysStopped(let failure):
            service.logger.info("\(path) ('\(app?.description ?? "")') stays stopped: \(startError(failure).message)")
        }
    }

    /// What a failed `Start` answers: `AccessDenied` for a refusal, as GeoClue's.
    private func startError(_ failure: Life.Failure) -> DBusError {
        switch failure {
        case .admission(let error): error
        case .refused(let refusal): .accessDenied(explain(refusal, app?.id ?? desktopId ?? "", uid: uid ?? 0))
        case .startInProgress: .failed("Start is already in progress")
        default: requestError(failure)
        }
    }

    /// What a failed `RequestLocation` answers: `io.github.whereabouts1.Error.PermissionDenied` for a refusal.
    private func requestError(_ failure: Life.Failure) -> DBusError {
        let appID = app?.id ?? desktopId ?? ""
        let uid = uid ?? 0
        return switch failure {
        case .admission(let error) where error.name == DBusError.Name.accessDenied:
            DBusError(name: Whereabouts.Error.permissionDenied, message: error.message)
        case .admission(let error): error
        case .refused(let refusal):
            DBusError(name: Whereabouts.Error.permissionDenied, message: explain(refusal, appID, uid: uid))
        case .startInProgress: .failed("Start is already in progress")
        case .timedOut: DBusError(name: Whereabouts.Error.timeout, message: "no location within the timeout")
        case .held(.servicesDisabled):
            DBusError(name: Whereabouts.Error.servicesDisabled, message: "location services are switched off")
        case .held(.sessionInactive):
            DBusError(
                name: Whereabouts.Error.permissionDenied, message: explain(.sessionInactive, appID, uid: uid))
        case .held(.agentDisabled):
            DBusError(
                name: Whereabouts.Error.permissionDenied, message: explain(.disabledByAgent, appID, uid: uid))
        case .unavailable:
            DBusError(name: Whereabouts.Error.locationUnavailable, message: "the location providers went away")
        case .revoked: DBusError(name: Whereabouts.Error.permissionDenied, message: "the authorisation was revoked")
        case .deleted: .failed("the client was deleted")
        }
    }

    // MARK: What the service tells the client

    /// Serves `fix`: answers waiting requests, then, when started, signals it by the threshold rules.
    func offer(_ fix: Fix) { apply(.fix(fix)) }

    /// The providers can deliver now, or no longer can (`reason`): `Available` follows, and waiting requests fail
    /// when they no longer can.
    func providersAvailabilityChanged(_ available: Bool, reason: String) {
        apply(.providersAvailability(available, reason: reason))
    }

    /// Tells the owner the satellites changed (`SatellitesChanged`), when the client ``seesSatellites`` and the
    /// owner uses Whereabouts' interfaces: a GeoClue client is sent nothing new.
    func skyPublished(_ satellites: [Satellite]) {
        guard seesSatellites, usesWhereaboutsInterfaces else { return }
        service.connection.emitSignal(
            path: path, interface: Whereabouts.clientInterface, member: "SatellitesChanged",
            arguments: [SkyBroadcast.value(of: satellites)], destination: owner)
    }

    /// Holds the client for a reason outside it: waiting requests fail, a started client becomes inactive and
    /// starts again by itself once every hold has ended, and the owner hears `AvailabilityChanged(false, reason)`.
    func hold(_ hold: ClientHold, reason: String) { apply(.hold(hold, reason: reason)) }

    /// Ends a hold. Once none is left, the owner hears whether location is available again, and a client the
    /// holds stopped starts again if its app is still authorised.
    func release(_ hold: ClientHold, reason: String) {
        apply(.release(hold, reason: reason, available: service.availableLevel != .none))
    }

    // MARK: Location objects

    /// Publishes `fix` as the client's new Location object: the `Location` property and `LocationUpdated`.
    private func signal(_ fix: Fix) {
        let oldPath = streamed.currentPath ?? .root
        let newPath = streamed.add(fix, under: self, in: service).path
        // In GeoClue's order: the signal, then the property's change.
        service.connection.emitSignal(
            path: path, interface: GeoClue.clientInterface, member: "LocationUpdated",
            arguments: [.objectPath(oldPath), .objectPath(newPath)], destination: owner)
        changed { $0.location(from: oldPath, to: newPath) }
    }

    /// Puts `fix` into the current Location object, with `PropertiesChanged` and no `LocationUpdated`: on GeoClue's
    /// Location interface, and on ours once the owner uses Whereabouts' interfaces.
    private func refresh(_ current: LocationObject, with fix: Fix) {
        var before: [String: [String: DBusValue]] = [:]
        for interface in current.interfaces { before[interface.name] = current.allProperties(of: interface) }
        current.fix = fix
        for interface in current.interfaces
        where interface.name != Whereabouts.locationInterface || usesWhereaboutsInterfaces {
            // Only what changed, as GeoClue's skeleton announces it.
            let changed = current.allProperties(of: interface).filter {
                !Self.sameOnTheWire(before[interface.name]?[$0.key], $0.value)
            }
            guard !changed.isEmpty else { continue }
            service.connection.emitPropertiesChanged(
                path: current.path, interface: interface.name, changed: changed, destination: owner)
        }
    }

    /// True when `old` and `new` are the same value as they go on the wire: a number unknown before (NaN, in our
    /// interface) and unknown still is no change.
    private static func sameOnTheWire(_ old: DBusValue?, _ new: DBusValue) -> Bool {
        if case .double(let before)? = old, case .double(let after) = new {
            return before.bitPattern == after.bitPattern
        }
        return old == new
    }

    /// `LastLocation`: the latest fix any provider produced, even an old one, as an object marked stale at
    /// `…/LastLocation`; made when read, so clients that never ask cost nothing; `/` before any fix.
    private func lastKnownPath() -> ObjectPath {
        guard service.servicesEnabled, life.holds.isEmpty, permittedLevel != .none, let fix = service.lastFix else {
            return .root
        }
        let served = present(fix, servedAt: permittedLevel, shownAt: shownLevel)
        if let lastKnown, lastKnown.fix == served { return lastKnown.path }
        let object = LocationObject(client: self, slot: .lastKnown, fix: served)
        lastKnown = object
        return object.path
    }

    /// Unexports the client and its Location objects, failing waiting requests.
    func tearDown() {
        apply(.deleted)
        streamed.removeAll(from: service)
        answers.removeAll(from: service)
        lastKnown = nil
    }

    /// The Location object at `relativePath` below the client: `Location/M`, `Request/M` or `LastLocation`.
    func object(at relativePath: Substring) -> LocationObject? {
        if relativePath == "LastLocation" { return lastKnown }
        let (node, rest) = relativePath.firstElement
        guard let name = rest else { return nil }
        return switch ObjectSet.Kind(rawValue: String(node)) {
        case .location: streamed.object(named: name)
        case .request: answers.object(named: name)
        case nil: nil
        }
    }

    /// The nodes directly below `relativePath` (empty for the client itself) that lead to its Location objects.
    func childNames(below relativePath: Substring) -> [String] {
        switch relativePath {
        case "":
            var names: [String] = []
            if !streamed.isEmpty { names.append(ObjectSet.Kind.location.rawValue) }
            if !answers.isEmpty { names.append(ObjectSet.Kind.request.rawValue) }
            if lastKnown != nil { names.append("LastLocation") }
            return names
        case ObjectSet.Kind.location.rawValue[...]: return streamed.childNames
        case ObjectSet.Kind.request.rawValue[...]: return answers.childNames
        default: return []
        }
    }

    /// Tells the owner that `values` of `interface` changed; a change of ours only once it uses Whereabouts'
    /// interfaces.
    func emitChanged(_ values: [String: DBusValue], interface: String) {
        guard interface != Whereabouts.clientInterface || usesWhereaboutsInterfaces else { return }
        service.connection.emitPropertiesChanged(path: path, interface: interface, changed: values, destination: owner)
    }

    /// Called when the owner reads `io.github.whereabouts1.Location` of one of the client's Location objects.
    func noteWhereaboutsInterfacesUsed() { usesWhereaboutsInterfaces = true }
}

extension ClientObject {
    /// What an object set's grace timer calls: releases the set's objects whose grace period ended.
    fileprivate func expiry(of kind: ObjectSet.Kind) -> @BusActor () -> Void {
        { [weak self] in
            guard let self else { return }
            switch kind {
            case .location: self.streamed.expire(in: self.service)
            case .request: self.answers.expire(in: self.service)
            }
        }
    }
}
