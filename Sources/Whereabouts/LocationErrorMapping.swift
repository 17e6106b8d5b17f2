import DBus
import WhereaboutsCore

extension LocationError {
    /// Maps a D-Bus error onto the library's cases.
    init(_ error: DBusError) {
        switch error.name {
        case BusNames.Whereabouts.Error.timeout: self = .timeout
        case BusNames.Whereabouts.Error.locationUnavailable: self = .locationUnavailable
        case BusNames.Whereabouts.Error.servicesDisabled: self = .servicesDisabled
        case BusNames.Whereabouts.Error.limitsExceeded: self = .limitsExceeded
        case DBusError.Name.invalidArgs: self = .invalidArgument(error.message)
        case BusNames.Whereabouts.Error.permissionDenied, DBusError.Name.accessDenied:
            self = .permissionDenied(error.message)
        case DBusError.Name.serviceUnknown, DBusError.Name.nameHasNoOwner, DBusError.Name.disconnected,
            DBusError.Name.noReply, "org.freedesktop.DBus.Error.NoServer", "org.freedesktop.DBus.Error.FileNotFound":
            self = .serviceUnavailable(error.message)
        default: self = .other(name: error.name, message: error.message)
        }
    }
}
