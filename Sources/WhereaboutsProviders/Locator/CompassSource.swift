import Loop
import WhereaboutsCore

/// A compass whose headings go on the fixes (`[compass] enable=true`): iio-sensor-proxy's in the daemon, a test's
/// stand-in otherwise.
///
/// It is a provider too, so that demand starts and stops it like the others and `Providers` lists it, but it gives
/// no positions, only ``heading``.
@BusActor
public protocol CompassSource: LocationProvider {
    /// The heading, degrees clockwise from magnetic north in 0..<360; nil while there is none.
    var heading: Double? { get }
    /// Called whenever ``heading`` changes.
    var onHeading: (@BusActor (Double?) -> Void)? { get set }
}
