import DBus
import Loop
import WhereaboutsCore

/// One fix as served to one client: `org.freedesktop.GeoClue2.Location` at `…/Client/N/Location/M`.
///
/// Only the owning client's connection may read it. Unknown values use GeoClue's sentinels.
@BusActor
final class LocationObject: ExportedObject {
    let path: ObjectPath
    let owner: String
    var fix: Fix

    init(path: ObjectPath, owner: String, fix: Fix) {
        self.path = path
        self.owner = owner
        self.fix = fix
    }

    var interfaces: [InterfaceDescription] { [GeoClue.location] }

    func checkAccess(sender: String) -> DBusError? {
        sender == owner ? nil : .accessDenied("Access denied")
    }

    func handle(_ call: MethodCall, interface: String, method: String) throws(DBusError) -> Reply {
        throw .unknownMethod("No such method \"\(method)\"")
    }

    func property(_ name: String, interface: String) -> DBusValue {
        LocationObject.value(of: name, in: fix)
    }

    /// Every property, for `PropertiesChanged` after an in-place update.
    var allProperties: [String: DBusValue] {
        var values: [String: DBusValue] = [:]
        for property in GeoClue.location.properties { values[property.name] = LocationObject.value(of: property.name, in: fix) }
        return values
    }

    static func value(of name: String, in fix: Fix) -> DBusValue {
        switch name {
        case "Latitude": .double(fix.latitude)
        case "Longitude": .double(fix.longitude)
        case "Accuracy": .double(fix.horizontalAccuracy)
        case "Altitude": .double(fix.altitude ?? GeoClue.unknownAltitude)
        case "Speed": .double(fix.speed ?? GeoClue.unknownSpeedOrHeading)
        case "Heading": .double(fix.course ?? GeoClue.unknownSpeedOrHeading)
        case "Description": .string(fix.description)
        default:
            .structure([
                .uint64(UInt64(max(0, fix.timestamp.seconds))), .uint64(UInt64(max(0, fix.timestamp.subsecondMicroseconds))),
            ])
        }
    }
}
