/// Puts a compass's heading on a fix: the magnetic heading as the compass reads it, the true heading corrected by
/// the magnetic declination the World Magnetic Model gives for the fix's place and date, and an accuracy.
///
/// The declination is taken at the fix's latitude and longitude, its ellipsoidal altitude (0 when it has none)
/// and its timestamp. There is no true heading when there is no model (its file is missing or bad), when the
/// fix's date is outside the model's validity or its altitude outside the model's heights (``Headings/problem``
/// says which), and in the WMM's blackout zone, where the horizontal field is too weak for a compass to point.
///
/// **Accuracy.** iio-sensor-proxy reports a heading without any accuracy, so ``headingAccuracy`` is a fixed,
/// documented figure rather than a measurement: 15° at 95% confidence, what a calibrated phone magnetometer held
/// flat away from iron achieves (the model's own declination error, under half a degree at 1σ outside the polar
/// regions, is small beside it). In the WMM's caution zone, where the weak horizontal field makes any compass
/// unsteady, the figure doubles to ``cautionZoneHeadingAccuracy``; in the blackout zone the accuracy is unknown
/// (nil). Without a model the zone is unknown and the ordinary figure is given.
public struct HeadingCorrection: Sendable {
    /// The heading accuracy given outside the WMM's caution and blackout zones, in degrees at 95% confidence.
    public static let headingAccuracy = 15.0
    /// The heading accuracy given in the WMM's caution zone, in degrees at 95% confidence.
    public static let cautionZoneHeadingAccuracy = 30.0

    /// The headings for one fix.
    public struct Headings: Sendable, Equatable {
        /// The compass's heading, degrees clockwise from magnetic north, in 0..<360.
        public var magnetic: Double
        /// `magnetic` plus the declination, degrees clockwise from true north, in 0..<360; nil when there is none.
        public var trueHeading: Double?
        /// The accuracy, degrees at 95% confidence; nil when unknown.
        public var accuracy: Double?
        /// Why the model gave no declination for the fix, if it had one and did not.
        public var problem: MagneticFieldError?
    }

    /// The World Magnetic Model; nil when none could be loaded, and then there is no true heading.
    public let model: MagneticModel?

    /// A correction by `model`, or none when `model` is nil.
    public init(model: MagneticModel?) {
        self.model = model
    }

    /// A compass reading as a heading in 0..<360, or nil when it is not one: not finite, or outside 0...360 degrees
    /// (360 is north, as 0 is).
    public static func heading(fromReading reading: Double) -> Double? {
        guard reading.isFinite, (0.0...360.0).contains(reading) else { return nil }
        return reading == 360 ? 0 : reading
    }

    /// The headings at `fix` for a compass reading `magnetic` degrees (already checked with
    /// ``heading(fromReading:)``).
    public func headings(magnetic: Double, at fix: Fix) -> Headings {
        var headings = Headings(magnetic: magnetic, trueHeading: nil, accuracy: Self.headingAccuracy, problem: nil)
        guard let model else { return headings }
        let field: MagneticField
        do {
            field = try model.field(
                latitude: fix.latitude, longitude: fix.longitude, heightAboveEllipsoid: fix.ellipsoidalAltitude ?? 0,
                at: fix.timestamp)
        } catch {
            headings.problem = error
            return headings
        }
        switch field.compassZone {
        case .blackout:
            headings.accuracy = nil
            return headings
        case .caution:
            headings.accuracy = Self.cautionZoneHeadingAccuracy
        case .normal:
            break
        }
        headings.trueHeading = Self.wrapped(magnetic + field.declination)
        return headings
    }

    /// `fix` with the headings for a compass reading `magnetic`, or with none when `magnetic` is nil or the fix's
    /// provider does not carry them (``ProviderKind/carriesCompassHeading``); and why it has no true heading, when
    /// the model gave no declination.
    public func applying(magnetic: Double?, to fix: Fix) -> (fix: Fix, problem: MagneticFieldError?) {
        var headed = fix
        guard let magnetic, fix.provider.carriesCompassHeading else {
            headed.magneticHeading = nil
            headed.trueHeading = nil
            headed.headingAccuracy = nil
            return (headed, nil)
        }
        let headings = headings(magnetic: magnetic, at: fix)
        headed.magneticHeading = headings.magnetic
        headed.trueHeading = headings.trueHeading
        headed.headingAccuracy = headings.accuracy
        return (headed, headings.problem)
    }

    /// `degrees` brought into 0..<360.
    private static func wrapped(_ degrees: Double) -> Double {
        var wrapped = degrees.truncatingRemainder(dividingBy: 360)
        if wrapped < 0 { wrapped += 360 }
        return wrapped == 360 ? 0 : wrapped
    }
}
