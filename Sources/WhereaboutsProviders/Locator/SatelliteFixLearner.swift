import Loop
import WhereaboutsCore

/// A provider that learns from the satellite fixes the clients are given: Wi-Fi positioning remembers the places
/// it scans and contributes them (``WiFiProvider/observeSatelliteFix(_:)``).
@BusActor
public protocol SatelliteFixLearner: AnyObject {
    /// Takes a fused satellite fix.
    func observeSatelliteFix(_ fix: Fix)
}
