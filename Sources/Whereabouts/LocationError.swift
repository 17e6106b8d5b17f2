/// What can go wrong, as a Swift enum (the seed API's error type, extended).
public enum LocationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No fix within the requested time (`io.github.whereabouts1.Error.Timeout`).
    case timeout
    /// No provider can deliver a location (`io.github.whereabouts1.Error.LocationUnavailable`).
    case locationUnavailable
    /// The app may not have location (`…Error.PermissionDenied`, or GeoClue's `AccessDenied` at `Start`).
    case permissionDenied(String)
    /// Location services are switched off (`…Error.ServicesDisabled`).
    case servicesDisabled
    /// The service is a plain GeoClue without Whereabouts' interfaces, which cannot do this.
    case unsupported(String)
    /// The service refused an argument, which the message names (`org.freedesktop.DBus.Error.InvalidArgs`): for
    /// ``LocationManager/addRegion(_:)`` a coordinate, radius, id or option out of range, for
    /// ``LocationManager/removeRegion(_:)`` an id the app has no region of.
    case invalidArgument(String)
    /// The app has as many as the service keeps, of regions for ``LocationManager/addRegion(_:)``
    /// (`io.github.whereabouts1.Error.LimitsExceeded`).
    case limitsExceeded
    /// No location service answers on the bus, or the bus went away.
    case serviceUnavailable(String)
    /// Any other D-Bus error, by name.
    case other(name: String, message: String)

    public var description: String {
        switch self {
        case .timeout: "no location within the timeout"
        case .locationUnavailable: "no provider can deliver a location"
        case .permissionDenied(let message): "permission denied: \(message)"
        case .servicesDisabled: "location services are disabled"
        case .unsupported(let what): "not supported by this location service: \(what)"
        case .invalidArgument(let message): "invalid argument: \(message)"
        case .limitsExceeded: "the service's limit is reached (too many regions for this app)"
        case .serviceUnavailable(let message): "no location service: \(message)"
        case .other(let name, let message): "\(message) (\(name))"
        }
    }
}
