import DBus
import Loop
import WhereaboutsCore

/// One fix as served to one client: `org.freedesktop.GeoClue2.Location` and `io.github.whereabouts1.Location` at
/// `…/Client/N/Location/M` (streamed fixes) or `…/Client/N/Request/M` (answers to `RequestLocation`).
///
/// Only the owning client's connection may read it. Unknown values are GeoClue's sentinels on GeoClue's
/// interface and NaN on ours, never zero.
@BusActor
final class LocationObject: ExportedObject {
    /// Where a Location object is below its client.
    enum Slot: Equatable {
        /// `Location/M` (the M-th fix signalled) or `Request/M` (the M-th answer to `RequestLocation`).
        case numbered(ObjectSet.Kind, UInt32)
        /// `LastLocation`.
        case lastKnown
    }

    /// The client it is served under, which keeps it: it is reached only through the client.
    unowned let client: ClientObject
    let slot: Slot
    /// Its fix, in the copy the clients given the same fix share (``SharedFix``).
    private var shared: SharedFix

    init(client: ClientObject, slot: Slot, fix: Fix) {
        self.client = client
        self.slot = slot
        shared = client.service.share(fix)
    }

    /// The fix it serves.
    var fix: Fix {
        get { shared.fix }
        set { shared = client.service.share(newValue) }
    }

    /// Made from the client's number and the slot when asked, not kept: only signals and replies need it. Written
    /// in one piece (the client's path, the kind, the number: valid elements each), as each update asks for it.
    var path: ObjectPath {
        switch slot {
        case .numbered(let kind, let number): ObjectPath(trusted: "\(client.path.rawValue)/\(kind.rawValue)/\(number)")
        case .lastKnown: ObjectPath(trusted: "\(client.path.rawValue)/LastLocation")
        }
    }

    /// True when the fix is served as the last known location rather than as a current one.
    var stale: Bool { slot == .lastKnown }

    var interfaces: [InterfaceDescription] { [GeoClue.location, Whereabouts.location] }

    func checkAccess(sender: String) -> DBusError? {
        sender == client.owner ? nil : .accessDenied("Access denied")
    }

    func handle(_ call: MethodCall, interface: String, method: String) throws(DBusError) -> Reply {
        throw .unknownMethod("No such method “\(method)”")
    }

    /// A property's value for `Get` and `GetAll`, which only the owner may call.
    func property(_ name: String, interface: String) -> DBusValue {
        if interface == Whereabouts.locationInterface { client.noteWhereaboutsInterfacesUsed() }
        return value(of: name, interface: interface)
    }

    private func value(of name: String, interface: String) -> DBusValue {
        interface == Whereabouts.locationInterface ? extendedValue(of: name) : LocationObject.value(of: name, in: fix)
    }

    /// `io.github.whereabouts1.Location`'s properties; NaN stands for unknown.
    private func extendedValue(of name: String) -> DBusValue {
        func known(_ value: Double?) -> DBusValue { .double(value ?? .nan) }
        switch name {
        case "Latitude": return .double(fix.latitude)
        case "Longitude": return .double(fix.longitude)
        case "HorizontalAccuracy": return .double(fix.horizontalAccuracy)
        case "Altitude": return known(fix.altitude)
        case "EllipsoidalAltitude": return known(fix.ellipsoidalAltitude)
        case "VerticalAccuracy": return known(fix.verticalAccuracy)
        case "Speed": return known(fix.speed)
        case "SpeedAccuracy": return known(fix.speedAccuracy)
        case "Course": return known(fix.course)
        case "CourseAccuracy": return known(fix.courseAccuracy)
        case "Climb": return known(fix.climb)
        case "ClimbAccuracy": return known(fix.climbAccuracy)
        case "MagneticHeading": return known(fix.magneticHeading)
        case "TrueHeading": return known(fix.trueHeading)
        case "HeadingAccuracy": return known(fix.headingAccuracy)
        case "Provider": return .string(fix.provider.rawValue)
        case "Simulated": return .boolean(fix.isSimulated)
        case "Stale": return .boolean(stale)
        case "FixType": return .string(fix.fixType.rawValue)
        case "HDOP": return known(fix.hdop)
        case "VDOP": return known(fix.vdop)
        case "PDOP": return known(fix.pdop)
        default: return .uint64(UInt64(max(0, fix.timestamp.microseconds / 1000)))
        }
    }

    /// Every property of `interface` (GeoClue's or ours), for `PropertiesChanged` after an in-place update.
    func allProperties(of interface: InterfaceDescription) -> [String: DBusValue] {
        var values: [String: DBusValue] = [:]
        for property in interface.properties {
            values[property.name] = value(of: property.name, interface: interface.name)
        }
        return values
    }

    /// A property of `org.freedesktop.GeoClue2.Location`. `Heading` is the compass's magnetic heading when the fix
    /// has one and its course otherwise, as GeoClue 2.6 fills it: its location sources put the heading of
    /// iio-sensor-proxy's compass, uncorrected, over the receiver's course whenever the compass knows one.
    static func value(of name: String, in fix: Fix) -> DBusValue {
        switch name {
        case "Latitude": .double(fix.latitude)
        case "Longitude": .double(fix.longitude)
        case "Accuracy": .double(fix.horizontalAccuracy)
        case "Altitude": .double(fix.altitude ?? GeoClue.unknownAltitude)
        case "Speed": .double(fix.speed ?? GeoClue.unknownSpeedOrHeading)
        case "Heading": .double(fix.magneticHeading ?? fix.course ?? GeoClue.unknownSpeedOrHeading)
        case "Description": .string(fix.description)
        default:
            .structure([
                .uint64(UInt64(max(0, fix.timestamp.seconds))),
                .uint64(UInt64(max(0, fix.timestamp.subsecondMicroseconds))),
            ])
        }
    }
}

/// A fix as Location objects keep it: the objects of the clients given one fix hold one copy, as a thousand clients
/// at 1 fix/s would otherwise keep four thousand (``GeoClueService/share(_:)``).
final class SharedFix: Sendable {
    let fix: Fix

    init(_ fix: Fix) { self.fix = fix }
}
