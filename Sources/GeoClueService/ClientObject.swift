import DBus
import Loop
import WhereaboutsCore

/// One application's client: `org.freedesktop.GeoClue2.Client` at `/org/freedesktop/GeoClue2/Client/N`.
///
/// It answers only the connection that created it. Its property changes and `LocationUpdated` go to that
/// connection alone (GeoClue broadcasts the property changes, which leaks coordinates to every peer).
@BusActor
final class ClientObject: ExportedObject {
    /// The longest `DesktopId` accepted, in bytes: a desktop file name cannot be longer.
    static let maximumDesktopIdLength = 255

    let id: UInt32
    let path: ObjectPath
    let owner: String
    private unowned let service: GeoClueService

    private(set) var desktopId: String?
    private(set) var thresholds = Thresholds()
    private(set) var requestedLevel: UInt32 = AccuracyLevel.city.rawValue
    private(set) var active = false
    private(set) var servedLevel: AccuracyLevel = .none
    /// True once a fix has been served since the last `Start`.
    private(set) var hasFixSinceStart = false
    private var starting = false
    private var ledger = LocationLedger()
    private var locations: [UInt32: LocationObject] = [:]
    private var lastSignalled: Fix?
    private var expiryTimer: TimerID?

    init(id: UInt32, owner: String, service: GeoClueService) {
        self.id = id
        self.owner = owner
        self.service = service
        path = GeoClue.clientRoot.appending(String(id))
    }

    var interfaces: [InterfaceDescription] { [GeoClue.client] }

    /// The `Location` property: `/` until the first fix is signalled.
    var locationPath: ObjectPath {
        ledger.current.map { path.appending("Location").appending(String($0)) } ?? .root
    }

    func checkAccess(sender: String) -> DBusError? {
        sender == owner ? nil : .accessDenied("Access denied")
    }

    func property(_ name: String, interface: String) -> DBusValue {
        switch name {
        case "Location": .objectPath(locationPath)
        case "DistanceThreshold": .uint32(thresholds.distance)
        case "TimeThreshold": .uint32(thresholds.time)
        case "DesktopId": .string(desktopId ?? "")
        case "RequestedAccuracyLevel": .uint32(requestedLevel)
        default: .boolean(active)
        }
    }

    /// `Set` on `DistanceThreshold`, `TimeThreshold`, `DesktopId` and `RequestedAccuracyLevel`.
    ///
    /// Thresholds take effect at once; the requested level is read at the next `Start`, as in GeoClue.
    func setProperty(_ name: String, interface: String, value: DBusValue, sender: String) throws(DBusError) {
        switch name {
        case "DistanceThreshold": thresholds.distance = value.uint32!
        case "TimeThreshold": thresholds.time = value.uint32!
        case "RequestedAccuracyLevel": requestedLevel = value.uint32!
        case "DesktopId":
            let text = value.string!
            guard text.utf8.count <= ClientObject.maximumDesktopIdLength else {
                throw .invalidArgs(
                    "DesktopId is \(text.utf8.count) bytes long; at most \(ClientObject.maximumDesktopIdLength) are allowed")
            }
            desktopId = text
        default: throw .invalidArgs("Property \"\(name)\" is not writable")
        }
        emitChanged([name: property(name, interface: interface)])
    }

    func handle(_ call: MethodCall, interface: String, method: String) throws(DBusError) -> Reply {
        switch method {
        case "Start": return try start(call)
        default:
            stop()
            return .values([])
        }
    }

    // MARK: Start and Stop

    /// `Start`: checks the app against the configuration, then serves fixes at the requested level.
    ///
    /// It answers as soon as the caller's user is known, never waiting for an agent.
    private func start(_ call: MethodCall) throws(DBusError) -> Reply {
        if active { return .values([]) }
        guard let desktopId else { throw .accessDenied("'DesktopId' property must be set") }
        guard !starting else { throw .failed("Start is already in progress") }
        starting = true
        Task { @BusActor in
            defer { self.starting = false }
            do {
                let uid = try await service.uid(of: owner)
                guard service.client(id) === self else { throw DBusError.failed("the client was deleted") }
                if case .disallowed = service.configuration.permission(for: desktopId, uid: uid) {
                    service.logger.notice("'\(desktopId)' disallowed by configuration")
                    throw DBusError.accessDenied("'\(desktopId)' disallowed by configuration for UID \(uid)")
                }
                active = true
                hasFixSinceStart = false
                servedLevel = AccuracyLevel(clampingRequested: requestedLevel)
                emitChanged(["Active": .boolean(true)])
                call.reply()
                service.clientActivityChanged(self)
            } catch let error as DBusError {
                call.fail(error)
            } catch {
                call.fail(.failed("\(error)"))
            }
        }
        return .later
    }

    /// `Stop`: no more fixes; the `Location` property keeps its last value.
    func stop() {
        guard active else { return }
        active = false
        emitChanged(["Active": .boolean(false)])
        service.clientActivityChanged(self)
    }

    // MARK: Fixes

    /// Serves `fix` to the client if it is active, by the threshold rule.
    func offer(_ fix: Fix) {
        guard active else { return }
        hasFixSinceStart = true
        let served = coarsen(fix, to: servedLevel)
        let current = ledger.current.flatMap { locations[$0] }
        if let current, thresholds.decide(served, lastSignalled: lastSignalled) == .updateInPlace {
            current.fix = served
            service.connection.emitPropertiesChanged(
                path: current.path, interface: GeoClue.locationInterface, changed: current.allProperties,
                destination: owner)
            return
        }
        let now = service.clock.monotonicNow
        let step = ledger.advance(now: now)
        let newPath = path.appending("Location").appending(String(step.new))
        let object = LocationObject(path: newPath, owner: owner, fix: served)
        locations[step.new] = object
        service.connection.export(object, at: newPath)
        release(step.released)
        lastSignalled = served
        let oldPath = step.old.map { path.appending("Location").appending(String($0)) } ?? .root
        emitChanged(["Location": .objectPath(newPath)])
        service.connection.emitSignal(
            path: path, interface: GeoClue.clientInterface, member: "LocationUpdated",
            arguments: [.objectPath(oldPath), .objectPath(newPath)], destination: owner)
        scheduleExpiry()
    }

    private func release(_ indices: [UInt32]) {
        for index in indices {
            if let object = locations.removeValue(forKey: index) { service.connection.unexport(object.path) }
        }
    }

    private func scheduleExpiry() {
        if let expiryTimer { EventLoop.main.cancel(expiryTimer) }
        expiryTimer = nil
        guard let next = ledger.nextExpiry else { return }
        let delay = next - service.clock.monotonicNow
        expiryTimer = EventLoop.main.schedule(after: delay) { [weak self] in
            guard let self else { return }
            self.expiryTimer = nil
            self.release(self.ledger.expire(now: self.service.clock.monotonicNow))
            self.scheduleExpiry()
        }
    }

    /// Unexports the client and its Location objects.
    func tearDown() {
        if let expiryTimer { EventLoop.main.cancel(expiryTimer) }
        expiryTimer = nil
        active = false
        release(Array(locations.keys))
        service.connection.unexport(path)
    }

    private func emitChanged(_ values: [String: DBusValue]) {
        service.connection.emitPropertiesChanged(
            path: path, interface: GeoClue.clientInterface, changed: values, destination: owner)
    }
}
