import DBus
import Loop
import LoopScheduling
import WhereaboutsCore

/// The bounded Location objects of one kind (`Location` or `Request`) under a client, and their release timer.
///
/// They are served as one subtree at `client/kind`, so a fix that makes one object and releases another changes
/// this set alone, not the connection's tables of every object.
@BusActor
struct ObjectSet {
    /// The objects' kind, which names the node they are served under.
    enum Kind: String {
        case location = "Location"
        case request = "Request"
    }

    let kind: Kind
    private var ledger = LocationLedger()
    private let numbered = NumberedObjects()
    /// Where the set is served while it holds objects.
    private var servedAt: ObjectPath?
    private var expiryTimer: (id: ScheduledTimer, deadline: MonotonicTime)?
    /// Called when the grace timer fires; it must call ``expire(in:)``. Set once by the owning client.
    var whenDue: @BusActor () -> Void = {}

    init(_ kind: Kind) { self.kind = kind }

    var current: LocationObject? { ledger.current.flatMap { numbered.objects[$0] } }
    var currentPath: ObjectPath? { current?.path }

    /// Serves a new object for `fix`, releasing what the ledger says must go.
    /// `onExtendedRead` is called when the owner reads the new object's `io.github.whereabouts1.Location`;
    mutating func add(
        _ fix: Fix, owner: String, in service: GeoClueService, under client: ObjectPath,
        onExtendedRead: @escaping @BusActor () -> Void
    ) -> LocationObject {
        let step = ledger.advance(now: service.clock.monotonicNow)
        let base = client.appending(kind.rawValue)
        let object = LocationObject(
            path: base.appending(String(step.new)), owner: owner, fix: fix, onExtendedRead: onExtendedRead)
        if servedAt == nil {
            service.connection.exportSubtree(numbered, at: base, visibleTo: owner)
            servedAt = base
        }
        numbered.objects[step.new] = object
        release(step.released, from: service)
        scheduleExpiry(service)
        return object
    }

    private mutating func release(_ indices: [UInt32], from service: GeoClueService) {
        for index in indices { numbered.objects[index] = nil }
        if numbered.objects.isEmpty, let servedAt {
            service.connection.unexportSubtree(at: servedAt)
            self.servedAt = nil
        }
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
        release(ledger.expire(now: service.clock.monotonicNow), from: service)
        scheduleExpiry(service)
    }

    mutating func removeAll(from service: GeoClueService) {
        if let expiryTimer { service.timers.cancelTimer(expiryTimer.id) }
        expiryTimer = nil
        release(Array(numbered.objects.keys), from: service)
    }
}

/// A set's objects by number, as the connection finds them: `Location/7` is object 7, and `Location/07` none.
@BusActor
private final class NumberedObjects: ExportedSubtree {
    var objects: [UInt32: LocationObject] = [:]

    func child(named name: Substring) -> (any ExportedObject)? {
        guard let number = UInt32(name), String(number) == name else { return nil }
        return objects[number]
    }

    var childNames: [String] { objects.keys.map { String($0) } }
}
