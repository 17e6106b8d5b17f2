import WhereaboutsCore

/// Traps when a parser hands out a sky that breaks what `Satellites` promises: elevations in -90...90, azimuths in
/// 0..<360, C/N0 in 0...99, and each satellite once.
public func checkSky(_ sky: [Satellite]) {
    for satellite in sky {
        precondition(satellite.elevation.map { abs($0) <= 90 } ?? true, "elevation out of range: \(satellite)")
        precondition(satellite.azimuth.map { $0 >= 0 && $0 < 360 } ?? true, "azimuth out of range: \(satellite)")
        precondition(
            satellite.signalStrength.map { $0 >= 0 && $0 <= 99 } ?? true, "C/N0 out of range: \(satellite)")
    }
    precondition(
        Set(sky.map { "\($0.constellation.rawValue) \($0.id)" }).count == sky.count, "a satellite listed twice")
}
