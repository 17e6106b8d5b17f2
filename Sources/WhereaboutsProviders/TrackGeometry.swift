// Bearings between positions; the only file of the module that needs the C library's trigonometry.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The initial great-circle bearing from the first position to the second, in degrees clockwise from true north,
/// in 0..<360 (spherical Earth).
func initialBearing(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
    let radians = Double.pi / 180
    let phi1 = lat1 * radians
    let phi2 = lat2 * radians
    let deltaLambda = (lon2 - lon1) * radians
    let y = sin(deltaLambda) * cos(phi2)
    let x = cos(phi1) * sin(phi2) - sin(phi1) * cos(phi2) * cos(deltaLambda)
    let degrees = atan2(y, x) / radians
    let normalized = degrees < 0 ? degrees + 360 : degrees
    return normalized >= 360 ? 0 : normalized
}
