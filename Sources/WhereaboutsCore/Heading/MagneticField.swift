/// The Earth's main magnetic field at a point, as the magnetic model gives it in the geodetic frame: components in
/// nanotesla, angles in degrees.
public struct MagneticField: Sendable, Equatable {
    /// X, the northward component, in nanotesla.
    public var north: Double
    /// Y, the eastward component, in nanotesla.
    public var east: Double
    /// Z, the downward component, in nanotesla.
    public var down: Double

    /// Makes a field from its north, east and down components, in nanotesla.
    public init(north: Double, east: Double, down: Double) {
        self.north = north
        self.east = east
        self.down = down
    }

    /// H, the horizontal intensity, in nanotesla: what turns a compass needle. ``compassZone`` grades it.
    public var horizontalIntensity: Double { (north * north + east * east).squareRoot() }

    /// F, the total intensity, in nanotesla.
    public var totalIntensity: Double {
        (north * north + east * east + down * down).squareRoot()
    }

    /// D, the declination: the angle from true north to magnetic north, in degrees in -180...180, positive east.
    ///
    /// True heading = magnetic heading + declination.
    public var declination: Double { arcTangent(east, north) / radiansPerDegree }

    /// I, the inclination (dip): the angle of the field below the horizontal, in degrees in -90...90, positive down.
    public var inclination: Double { arcTangent(down, horizontalIntensity) / radiansPerDegree }

    /// How far a compass can be trusted here, by the WMM's zones of horizontal intensity.
    public var compassZone: CompassZone {
        let intensity = horizontalIntensity
        if intensity < CompassZone.blackoutLimit { return .blackout }
        if intensity < CompassZone.cautionLimit { return .caution }
        return .normal
    }
}

/// The WMM's zones around the magnetic poles, where the horizontal field is weak and a compass turns unreliable.
public enum CompassZone: Sendable, Equatable {
    /// Horizontal intensity of 6000 nT or more: the compass is as good as the model.
    case normal
    /// Horizontal intensity from 2000 up to 6000 nT: the WMM's caution zone, where a compass may be unreliable.
    case caution
    /// Horizontal intensity below 2000 nT: the WMM's blackout zone, where a compass is unreliable.
    case blackout

    /// The horizontal intensity, in nanotesla, below which the field is in the blackout zone.
    public static let blackoutLimit = 2_000.0
    /// The horizontal intensity, in nanotesla, below which the field is in the caution zone.
    public static let cautionLimit = 6_000.0
}
