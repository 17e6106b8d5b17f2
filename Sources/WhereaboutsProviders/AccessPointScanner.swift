import Loop
import WhereaboutsCore

/// Wi-Fi scans from the system's wireless daemon (wpa_supplicant, else NetworkManager), for network positioning.
///
/// A scanner follows the wireless interfaces from the moment it is made (without scanning), so that
/// ``isAvailable`` is known before a client needs Wi-Fi; it scans only between ``start(interval:)`` and ``stop()``.
@BusActor
public protocol AccessPointScanner: AnyObject {
    /// The backend in use, for logs and status: `wpa_supplicant`, `NetworkManager`, or `none`.
    var backend: String { get }
    /// True while at least one wireless interface exists.
    var isAvailable: Bool { get }
    /// Called after each completed scan with the access points of every wireless interface together.
    var onScan: (@BusActor ([AccessPoint]) -> Void)? { get set }
    /// Called when ``isAvailable`` or ``backend`` changes.
    var onAvailabilityChanged: (@BusActor () -> Void)? { get set }
    /// Scans now, then every `interval`, until ``stop()``; a second call only changes the interval.
    func start(interval: Duration)
    /// Stops scanning; interfaces are still followed.
    func stop()
}
