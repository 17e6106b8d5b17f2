import WhereaboutsCore

/// Traps when a parser hands out a fix that breaks the promises every provider makes: coordinates in range, a
/// finite positive accuracy (zero only where the input states it, as a static file may), and finite values
/// wherever a value is given.
public func checkFix(_ fix: Fix, allowingZeroAccuracy: Bool = false) {
    precondition(fix.latitude.isFinite && abs(fix.latitude) <= 90, "latitude out of range: \(fix.latitude)")
    precondition(fix.longitude.isFinite && abs(fix.longitude) <= 180, "longitude out of range: \(fix.longitude)")
    precondition(
        fix.horizontalAccuracy.isFinite
            && (fix.horizontalAccuracy > 0 || allowingZeroAccuracy && fix.horizontalAccuracy == 0),
        "horizontal accuracy not a positive number: \(fix.horizontalAccuracy)")
    let optionals: [(String, Double?)] = [
        ("altitude", fix.altitude), ("ellipsoidal altitude", fix.ellipsoidalAltitude),
        ("vertical accuracy", fix.verticalAccuracy), ("speed", fix.speed), ("speed accuracy", fix.speedAccuracy),
        ("course", fix.course), ("course accuracy", fix.courseAccuracy), ("climb", fix.climb),
        ("climb accuracy", fix.climbAccuracy),
    ]
    for (name, value) in optionals {
        if let value { precondition(value.isFinite, "\(name) is not finite: \(value)") }
    }
}
