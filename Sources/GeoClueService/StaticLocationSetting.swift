import DBus
import Loop
import WhereaboutsCore
import WhereaboutsStorage

extension GeoClueService {
    /// `io.github.whereabouts1.Manager.SetStaticLocation(d latitude, d longitude, d altitude, d accuracy)`: with the
    /// management action, serves this location from the static source in the place of its file (and even when
    /// `[static-source]` is off), kept across restarts until `ClearStaticLocation`.
    func setStaticLocation(_ location: StaticLocation, _ call: MethodCall) -> Reply {
        managing(call) { self.changeStaticLocation(to: location) }
        return .later
    }

    /// `io.github.whereabouts1.Manager.ClearStaticLocation()`: with the management action, forgets the location
    /// `SetStaticLocation` set; the static source serves its file again, if it is on.
    func clearStaticLocation(_ call: MethodCall) -> Reply {
        managing(call) { self.changeStaticLocation(to: nil) }
        return .later
    }

    /// Keeps `location` (or forgets it) and has the static source serve it; a failure to keep it is logged and the
    /// location holds until the service stops.
    private func changeStaticLocation(to location: StaticLocation?) {
        if let staticLocationFile {
            do {
                if let location { try staticLocationFile.save(location) } else { try staticLocationFile.remove() }
            } catch {
                logger.error("static location: cannot save: \(error); it holds until the service stops")
            }
        }
        logger.notice(
            location.map { "static location set to \($0.latitude), \($0.longitude) ± \($0.accuracy) m" }
                ?? "static location cleared")
        staticLocation = location
        onStaticLocationChanged?(location)
    }
}
