import DBus
import Loop
import WhereaboutsCore

/// A client's geofencing calls, `io.github.whereabouts1.Client.AddRegion`, `RemoveRegion`, `ListRegions` and
/// `PendingRegionEvents`: the regions of the client's app and user (``RegionOwner``), which ``RegionWatch`` keeps.
extension ClientObject {
    /// `AddRegion(s id, d latitude, d longitude, d radius, a{sv} options) → d watched_radius`: parses and
    /// validates the arguments (`InvalidArgs` naming the one refused), then needs location services on and the
    /// app authorised *always* (`PermissionDenied`), then watches the region (`LimitsExceeded`, with nothing stored,
    /// past ``Region/limitPerOwner``, ``Region/limitPerUser`` or ``Region/limitInAll``), and replies with the radius
    /// watched.
    func addRegion(_ call: MethodCall) throws(DBusError) -> Reply {
        let arguments = call.arguments
        guard let id = arguments[0].string, let latitude = arguments[1].double, let longitude = arguments[2].double,
            let radius = arguments[3].double, let options = arguments[4].stringKeyedEntries
        else { throw .invalidArgs("AddRegion takes (s id, d latitude, d longitude, d radius, a{sv} options)") }
        let region: Region
        do {
            region = try Region.validated(
                id: id, latitude: latitude, longitude: longitude, radius: radius,
                options: options.mapValues(RegionOptionValue.init), now: service.clock.wallNow)
        } catch {
            throw .invalidArgs("\(error.argument): \(error.description)")
        }
        return try answerForApp(call) { [self] uid, app throws(DBusError) in
            guard service.servicesEnabled else {
                throw DBusError(name: Whereabouts.Error.servicesDisabled, message: "location services are switched off")
            }
            try await recomputeAuthorisation(app, uid: uid)
            guard authorisation.status == .authorisedAlways else {
                throw DBusError(
                    name: Whereabouts.Error.permissionDenied,
                    message:
                        "watching regions needs the app to be authorised always; it is \(authorisation.status.rawValue)"
                )
            }
            do throws(RegionLimitReached) {
                try service.regions.add(region, for: RegionOwner(user: uid, app: app))
            } catch {
                throw DBusError(name: Whereabouts.Error.limitsExceeded, message: error.description)
            }
            return [.double(region.radius)]
        }
    }

    /// `RemoveRegion(s id)`: stops watching the app's region `id`; `InvalidArgs` when it has none of that id.
    func removeRegion(_ call: MethodCall) throws(DBusError) -> Reply {
        guard let id = call.arguments[0].string else { throw .invalidArgs("RemoveRegion takes (s id)") }
        return try withOwner(call) { service, owner throws(DBusError) in
            guard service.regions.remove(id, for: owner) else {
                throw .invalidArgs("id: '\(owner.app)' watches no region '\(id)'")
            }
            return []
        }
    }

    /// `ListRegions() → a(sddda{sv})`: the app's regions, sorted by id, with their state.
    func listRegions(_ call: MethodCall) throws(DBusError) -> Reply {
        try withOwner(call) { service, owner in
            let rows = service.regions.monitor.records(of: owner).map(\.busValue)
            return [.array(element: "(sddda{sv})", rows)]
        }
    }

    /// `PendingRegionEvents() → a(sstddd)`: what happened while the app had no client, oldest first, emptied.
    func pendingRegionEvents(_ call: MethodCall) throws(DBusError) -> Reply {
        try withOwner(call) { service, owner in
            let rows = service.regions.takePending(for: owner).map { DBusValue.structure($0.busValues) }
            return [.array(element: "(sstddd)", rows)]
        }
    }

    /// Answers `call` with what `body` returns for the caller's regions, once its user is known, built in the
    /// caller's turn: a listing grows with the regions the caller keeps.
    private func withOwner(
        _ call: MethodCall,
        _ body: @escaping @BusActor (GeoClueService, RegionOwner) throws(DBusError) -> [DBusValue]
    ) throws(DBusError) -> Reply {
        try answerForAppInTurn(call) { [self] uid, app throws(DBusError) in
            try body(service, RegionOwner(user: uid, app: app))
        }
    }
}

extension RegionOptionValue {
    /// An option's value as the bus gave it.
    init(_ value: DBusValue) {
        switch value.unwrapped {
        case .boolean(let flag): self = .bool(flag)
        case .uint32(let number): self = .uint32(number)
        case .uint64(let number): self = .uint64(number)
        case let other: self = .other(signature: other.signature)
        }
    }
}

extension RegionRecord {
    /// A row of `ListRegions`: `(sddda{sv})`.
    var busValue: DBusValue {
        let details: [String: DBusValue] = [
            "state": .string(state.rawValue),
            "since": .uint64(UInt64(max(0, (since?.microseconds ?? 0) / 1000))),
            "notify-entry": .boolean(region.options.notifyEntry),
            "notify-exit": .boolean(region.options.notifyExit),
            "dwell": .uint32(UInt32(clamping: region.options.dwell?.components.seconds ?? 0)),
            "expires": .uint64(UInt64(max(0, region.options.expires?.seconds ?? 0))),
        ]
        return .structure([
            .string(region.id), .double(region.latitude), .double(region.longitude), .double(region.radius),
            .vardict(details),
        ])
    }
}

extension RegionOwner {
    /// The regions' owner for `app` of `user`: verified apps own theirs apart from the id claimed.
    init(user: UInt32, app: ClientApp) {
        self.init(user: user, app: app.id, verified: app.isVerified)
    }
}
