/// The World Magnetic Model (WMM): the Earth's main magnetic field as spherical-harmonic coefficients of degree and
/// order 12 at an epoch, with their yearly change, as NOAA NCEI and the British Geological Survey publish them in a
/// `WMM.COF` file (``parse(cofText:file:)``).
///
/// ``field(latitude:longitude:heightAboveEllipsoid:decimalYear:)`` evaluates the model as the WMM technical report
/// does: the coefficients moved to the date by their secular variation, the WGS84 position converted to geocentric
/// spherical coordinates, the field summed there from Schmidt semi-normalised associated Legendre functions and
/// rotated back to the geodetic frame. Its ``MagneticField/declination`` turns a magnetic heading into a true one:
/// true heading = magnetic heading + declination.
public struct MagneticModel: Sendable {
    /// The degree and order of the WMM's main field, the only one this type reads.
    public static let degree = 12

    /// The years from the epoch the model is made for; a new model replaces it at the end.
    public static let lifespan = 5.0

    /// The model's name from the file's header, e.g. "WMM-2025".
    public let name: String

    /// The decimal year the coefficients are given for, e.g. 2025.0.
    public let epoch: Double

    /// The coefficients, indexed by ``coefficientIndex(degree:order:)``.
    let coefficients: [GaussCoefficient]

    /// Makes a model from coefficients already checked: one for each degree 1...12 and order 0...degree.
    init(name: String, epoch: Double, coefficients: [GaussCoefficient]) {
        self.name = name
        self.epoch = epoch
        self.coefficients = coefficients
    }

    /// The dates the model is valid for, in decimal years: from the epoch up to, not including, the epoch plus
    /// ``lifespan`` (2025.0..<2030.0 for WMM2025).
    public var validity: Range<Double> { epoch..<(epoch + Self.lifespan) }

    /// The heights the WMM's specification covers, in metres above the WGS84 ellipsoid: 1 km below it to 850 km
    /// above.
    public static let heightRange = -1_000.0...850_000.0

    /// The field at a WGS84 position and a decimal year (``WallTime/decimalYear``).
    ///
    /// Latitude is in degrees north, -90...90 (the poles included); longitude in degrees east, any finite value;
    /// height in metres above the WGS84 ellipsoid, within ``heightRange`` (``Fix/ellipsoidalAltitude``; an
    /// altitude above mean sea level, or 0 when none is known, moves the declination by far less than the model's
    /// own error).
    ///
    /// Throws ``MagneticFieldError`` for a date outside ``validity`` (the model is not extrapolated: the caller logs
    /// that the coefficients need replacing) and for a position out of range.
    public func field(latitude: Double, longitude: Double, heightAboveEllipsoid: Double, decimalYear: Double)
        throws(MagneticFieldError) -> MagneticField
    {
        guard decimalYear.isFinite, validity.contains(decimalYear) else {
            throw .outsideValidity(decimalYear: decimalYear, model: name, validity: validity)
        }
        guard latitude.isFinite, (-90...90).contains(latitude) else { throw .latitudeOutOfRange(latitude) }
        guard longitude.isFinite else { throw .longitudeNotFinite(longitude) }
        guard heightAboveEllipsoid.isFinite, Self.heightRange.contains(heightAboveEllipsoid) else {
            throw .heightOutOfRange(heightAboveEllipsoid)
        }
        let position = GeocentricPosition(latitude: latitude, heightAboveEllipsoid: heightAboveEllipsoid / 1_000)
        let spherical = sphericalField(
            at: position, longitude: longitude * radiansPerDegree, yearsFromEpoch: decimalYear - epoch)
        // Back to the geodetic frame: a rotation about the east axis by the geocentric latitude less the geodetic.
        let cosineOfTilt =
            position.cosineOfLatitude * position.cosineOfGeodeticLatitude
            + position.sineOfLatitude * position.sineOfGeodeticLatitude
        let sineOfTilt =
            position.sineOfLatitude * position.cosineOfGeodeticLatitude
            - position.cosineOfLatitude * position.sineOfGeodeticLatitude
        return MagneticField(
            north: spherical.north * cosineOfTilt - spherical.down * sineOfTilt,
            east: spherical.east,
            down: spherical.north * sineOfTilt + spherical.down * cosineOfTilt)
    }

    /// The field at a WGS84 position at a moment: ``field(latitude:longitude:heightAboveEllipsoid:decimalYear:)``
    /// at the moment's ``WallTime/decimalYear``.
    public func field(latitude: Double, longitude: Double, heightAboveEllipsoid: Double, at time: WallTime)
        throws(MagneticFieldError) -> MagneticField
    {
        try field(
            latitude: latitude, longitude: longitude, heightAboveEllipsoid: heightAboveEllipsoid,
            decimalYear: time.decimalYear)
    }

    /// The field's north, east and down components in the geocentric spherical frame (X′, Y′, Z′ of the WMM
    /// technical report's equations 10 to 12), in nanotesla, from the coefficients moved by `yearsFromEpoch`.
    private func sphericalField(at position: GeocentricPosition, longitude: Double, yearsFromEpoch: Double)
        -> (north: Double, east: Double, down: Double)
    {
        let legendre = SchmidtLegendreFunctions(
            degree: Self.degree, sineOfLatitude: position.sineOfLatitude,
            cosineOfLatitude: position.cosineOfLatitude)
        let cosines = (0...Self.degree).map { cosine(Double($0) * longitude) }
        let sines = (0...Self.degree).map { sine(Double($0) * longitude) }
        let radiusRatio = GeocentricPosition.referenceRadius / position.radius
        var north = 0.0
        var east = 0.0
        var down = 0.0
        var radiusPower = radiusRatio * radiusRatio
        for n in 1...Self.degree {
            radiusPower *= radiusRatio
            var northTerm = 0.0
            var eastTerm = 0.0
            var downTerm = 0.0
            for m in 0...n {
                let index = coefficientIndex(degree: n, order: m)
                let coefficient = coefficients[index]
                let g = coefficient.g + yearsFromEpoch * coefficient.gRate
                let h = coefficient.h + yearsFromEpoch * coefficient.hRate
                let inPhase = g * cosines[m] + h * sines[m]
                northTerm -= inPhase * legendre.derivative[index]
                downTerm += inPhase * legendre.value[index]
                eastTerm += Double(m) * (g * sines[m] - h * cosines[m]) * legendre.valueOverCosine[index]
            }
            north += radiusPower * northTerm
            east += radiusPower * eastTerm
            down -= Double(n + 1) * radiusPower * downTerm
        }
        return (north, east, down)
    }
}

/// One degree and order's Gauss coefficients, in nanotesla, and their secular variation, in nanotesla a year.
struct GaussCoefficient: Sendable, Equatable {
    /// g at the epoch.
    var g: Double
    /// h at the epoch.
    var h: Double
    /// The yearly change of g.
    var gRate: Double
    /// The yearly change of h.
    var hRate: Double
}

/// The index of degree `n` and order `m` (0 ≤ m ≤ n) in arrays that run n = 0, 1, 1, 2, 2, 2, ... in order.
func coefficientIndex(degree n: Int, order m: Int) -> Int { n * (n + 1) / 2 + m }

/// Radians in one degree.
let radiansPerDegree = Double.pi / 180
