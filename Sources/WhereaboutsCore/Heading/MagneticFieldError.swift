/// Why the magnetic model gave no field for a position and date.
public enum MagneticFieldError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The date, in decimal years, is outside the dates the model is made for: before its epoch, or at or past its
    /// end, when a newer model replaces it.
    case outsideValidity(decimalYear: Double, model: String, validity: Range<Double>)
    /// The latitude is not a number in -90...90 degrees.
    case latitudeOutOfRange(Double)
    /// The longitude is NaN or infinite.
    case longitudeNotFinite(Double)
    /// The height, in metres above the WGS84 ellipsoid, is not a number in ``MagneticModel/heightRange``.
    case heightOutOfRange(Double)

    /// A human explanation.
    public var description: String {
        switch self {
        case .outsideValidity(let year, let model, let validity):
            "the date \(year) is outside \(model)'s validity, \(validity.lowerBound) up to \(validity.upperBound); "
                + "the model's coefficients need replacing"
        case .latitudeOutOfRange(let latitude):
            "the latitude \(latitude) is not in -90...90 degrees"
        case .longitudeNotFinite(let longitude):
            "the longitude \(longitude) is not a finite number"
        case .heightOutOfRange(let height):
            "the height \(height) m is outside the model's \(MagneticModel.heightRange.lowerBound) to "
                + "\(MagneticModel.heightRange.upperBound) m above the ellipsoid"
        }
    }
}
