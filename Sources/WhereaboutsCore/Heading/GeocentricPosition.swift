/// A WGS84 geodetic position as geocentric spherical coordinates, the frame the magnetic model is summed in (the WMM
/// technical report's equations 7 and 8); longitude is the same in both and is not kept.
struct GeocentricPosition: Sendable, Equatable {
    /// The WGS84 ellipsoid's semi-major axis, in kilometres.
    static let semiMajorAxis = 6_378.137
    /// The WGS84 ellipsoid's flattening.
    static let flattening = 1 / 298.257_223_563
    /// The square of the WGS84 ellipsoid's first eccentricity.
    static let eccentricitySquared = flattening * (2 - flattening)
    /// The magnetic model's reference radius, in kilometres: the `a` of its (a/r)^(n+2) terms.
    static let referenceRadius = 6_371.2

    /// The distance from the Earth's centre, in kilometres.
    let radius: Double
    /// The sine of the geocentric latitude.
    let sineOfLatitude: Double
    /// The cosine of the geocentric latitude; never negative.
    let cosineOfLatitude: Double
    /// The sine of the geodetic latitude the position was made from.
    let sineOfGeodeticLatitude: Double
    /// The cosine of the geodetic latitude the position was made from; never negative.
    let cosineOfGeodeticLatitude: Double

    /// Converts a geodetic latitude in degrees (-90...90) and a height above the ellipsoid in kilometres.
    ///
    /// The geocentric latitude is kept as its sine and cosine, the ratios of the position's distances from the
    /// equatorial plane and from the axis to its radius, so no inverse sine is taken. At ±90° the position is on the
    /// axis: its cosine is taken as 0, not as the cosine of π/2 rounded.
    init(latitude: Double, heightAboveEllipsoid height: Double) {
        let sine = sine(latitude * radiansPerDegree)
        let cosine = abs(latitude) == 90 ? 0 : cosine(latitude * radiansPerDegree)
        let curvatureRadius = Self.semiMajorAxis / (1 - Self.eccentricitySquared * sine * sine).squareRoot()
        let fromAxis = (curvatureRadius + height) * cosine
        let fromEquator = (curvatureRadius * (1 - Self.eccentricitySquared) + height) * sine
        let radius = (fromAxis * fromAxis + fromEquator * fromEquator).squareRoot()
        self.radius = radius
        self.sineOfLatitude = fromEquator / radius
        self.cosineOfLatitude = fromAxis / radius
        self.sineOfGeodeticLatitude = sine
        self.cosineOfGeodeticLatitude = cosine
    }
}
