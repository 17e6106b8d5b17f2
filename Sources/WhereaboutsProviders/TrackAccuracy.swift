// How Whereabouts turns dilution of precision and 1-sigma error estimates into 95% figures.
//
// Fix accuracies are radii at 95% confidence. Receivers give either error standard deviations (NMEA GST)
// or only dilutions of precision (GGA/GSA, GPX <hdop>/<vdop>), which must be scaled by an assumed
// user equivalent range error (UERE). The constants and their reasons live here, in one place.

/// The conversions from receiver error figures to the 95% accuracies of a `Fix`.
enum AccuracyModel {
    /// sqrt(-2 ln 0.05): the radius, in standard deviations, of the circle holding 95% of a circular bivariate
    /// normal distribution (equal, independent σ in north and east).
    static let circular95 = 2.447_746_830_680_816

    /// The two-sided 95% quantile of a normal distribution, for the vertical (one-dimensional) error.
    static let vertical95 = 1.959_963_984_540_054

    /// The UERE, 1σ in metres, assumed for an autonomous single-frequency fix.
    ///
    /// With GPS alone the SPS performance standard bounds the 95% horizontal error near 8 m at a typical HDOP
    /// of about 1, which is a UERE of about 4.6 m; current multi-constellation receivers do better. 4 m keeps
    /// the estimate honest without being pessimistic: HDOP 1 gives a 95% radius of 6.9 m.
    static let autonomousUERE = 4.0

    /// The UERE, 1σ in metres, assumed for a differential fix (DGPS/SBAS, RTK float or fixed: GGA quality 2, 4
    /// and 5).
    ///
    /// A quarter of the autonomous figure, the ratio gpsd uses. It overstates an RTK fix; RTK receivers
    /// normally also send GST, which takes precedence.
    static let differentialUERE = 1.0

    /// The HDOP assumed when a source gives neither DOP nor error estimates (an RMC-only receiver, a GPX point
    /// without `<hdop>`): a "good" geometry by the usual rating, giving 13.8 m at 95%.
    static let assumedHDOP = 2.0

    /// The 95% horizontal radius for a dilution of precision and a UERE.
    ///
    /// HDOP × UERE is the distance root mean square (DRMS, σ of the 2D error), so each axis has
    /// σ = DRMS / √2 and the 95% circle is 2.4477 × DRMS / √2 ≈ 1.73 × HDOP × UERE.
    static func horizontal(hdop: Double, uere: Double) -> Double {
        circular95 * hdop * uere / 2.0.squareRoot()
    }

    /// The 95% horizontal radius for 1σ latitude and longitude errors in metres.
    ///
    /// Unequal σ are replaced by their root mean square, which makes the circular-normal factor exact for equal
    /// σ and a close approximation for the mildly elliptical errors receivers report.
    static func horizontal(sigmaLatitude: Double, sigmaLongitude: Double) -> Double {
        circular95 * ((sigmaLatitude * sigmaLatitude + sigmaLongitude * sigmaLongitude) / 2).squareRoot()
    }

    /// The 95% vertical accuracy for a 1σ vertical error in metres.
    static func vertical(sigma: Double) -> Double { vertical95 * sigma }

    /// The 95% vertical accuracy for a VDOP and a UERE.
    static func vertical(vdop: Double, uere: Double) -> Double { vertical95 * vdop * uere }
}
