import DBus
import Loop
import LoopScheduling
import WhereaboutsCore

/// The bounded Location objects of one kind (`Location` or `Request`) under a client, and their release timer.
///
/// They are found through their client when called (``ClientTree``), so a fix that makes one object and releases
/// another changes this set alone, not the connection's tables.
@BusActor
struct ObjectSet {
    /// The objects' kind, which names the node they are served under.
    enum Kind: String {
        case location = "Location"
        case request = "Request"
    }

    let kind: Kind
    private var ledger = LocationLedger()
    private var objects: [UInt32: LocationObject] = [:]
    private var expiryTimer: (id: ScheduledTimer, deadline: MonotonicTime)?
    /// Called when the grace timer fires; it must call ``expire(in:)``. Set once by the owning client.
    var whenDue: @BusActor () -> Void = {}

    init(_ kind: Kind) { self.kind = kind }

    var current: LocationObject? { ledger.current.flatMap { objects[$0] } }
    var currentPath: ObjectPath? { current?.path }

    /// The object at the node `name` below the set's: `7` is object 7, and `07` none.
    func object(named name: Substring) -> LocationObject? {
        guard let number = UInt32(name), String(number) == name else { return nil }
        return objects[number]
    }

    /// The nodes of the objects served now.
    var childNames: [String] { objects.keys.map { String($0) } }

    var isEmpty: Bool { objects.isEmpty }

    /// Serves a new object for `fix` under `client`, releasing what the ledger says must go.
    mutating func add(_ fix: Fix, under client: ClientObject, in service: GeoClueService) -> LocationObject {
        let step = ledger.advance(now: service.clock.monotonicNow)
        let object = LocationObject(client: client, slot: .numbered(kind, step.new), fix: fix)
        objects[step.new] = object
        release(step.released)
        scheduleExpiry(service)
        return object
    }

    private mutating func release(_ indices: [UInt32]) {
        for index in indices { objects[index] = nil }
        // An empty set gives its table's storage back: most clients' requests are answered once.
        objects.releaseUnusedCapacity()
    }

    /// Arms the grace timer for the ledger's earliest expiry. A timer already due no later is kept: when it fires,
    /// ``expire(in:)`` releases what is due and arms the next, so a client streaming faster than the grace
    /// period does not re-arm a timer on every fix.
    private mutating func scheduleExpiry(_ service: GeoClueService) {
        guard let next = ledger.nextExpiry else {
            if let expiryTimer { service.timers.cancelTimer(expiryTimer.id) }
            expiryTimer = nil
            return
        }
        if let expiryTimer {
            if expiryTimer.deadline <= next { return }
            service.timers.cancelTimer(expiryTimer.id)
        }
        let id = service.timers.scheduleOnBus(after: next - service.clock.monotonicNow, whenDue)
        expiryTimer = (id, next)
    }

    /// Releases the objects whose grace period has ended.
    mutating func expire(in service: GeoClueService) {
        expiryTimer = nil
        release(ledger.expire(now: service.clock.monotonicNow))
        scheduleExpiry(service)
    }

    mutating func removeAll(from service: GeoClueService) {
        if let expiryTimer { service.timers.cancelTimer(expiryTimer.id) }
        expiryTimer = nil
        objects = [:]
    }
}
