/// How a fix decides a region: the rule documented on AddRegion and RegionChanged.
///
/// A fix is a circular normal distribution around its position whose 95% radius is its accuracy, so each
/// coordinate has the standard deviation σ = accuracy / √(−2 ln 0.05) (accuracy / 2.4477). A region is entered
/// when the probability of the true position lying inside it reaches ``entryProbability``, left when it falls to
/// ``exitProbability``, and keeps its state in between; a fix whose accuracy exceeds twice the radius decides
/// nothing.
///
/// Only a fix whose position lies inside a region can enter it: the probability of being within the radius is
/// at most Φ((radius − distance) / σ), which is below 0.85 for every distance above radius − 1.03σ. The spatial
/// index relies on this.
public enum RegionRule {
    /// The probability at which a region is entered.
    public static let entryProbability = 0.85
    /// The probability at which a region is left.
    public static let exitProbability = 0.15
    /// How long after AddRegion without a deciding fix "unknown" is reported.
    public static let undecidedTimeout: Duration = .seconds(60)

    /// The standard deviation per coordinate, in metres, of a fix whose 95% radius is `accuracy`.
    public static func standardDeviation(accuracy: Double) -> Double { accuracy / sigmasIn95PercentRadius }

    /// √(−2 ln 0.05): a circular normal distribution holds 95% of its mass within this many σ of its centre.
    static let sigmasIn95PercentRadius = (-2 * naturalLogarithm(0.05)).squareRoot()

    /// True when a fix of `accuracy` can decide a region of `radius`: the accuracy is at most twice the radius.
    static func decides(accuracy: Double, radius: Double) -> Bool { accuracy <= 2 * radius }

    /// The probability that the true position lies within `radius` of the centre, for a fix `distance` metres
    /// from the centre whose 95% radius is `accuracy`.
    ///
    /// With a = distance / σ and b = radius / σ this is 1 − Q₁(a, b), Q₁ being Marcum's Q function of order 1
    /// (the distribution function of a noncentral chi-square with 2 degrees of freedom, at b² with
    /// noncentrality a²). At a = 0 it is 1 − exp(−b²/2). Otherwise the Rice density
    /// r exp(−(r − a)²/2) I₀e(ar) is integrated over r by Gauss–Legendre quadrature, on panels of σ/2, from
    /// a − 8 (or 0) to b; when b lies 8σ or more beyond a the result is 1 or 0, off by less than 2·10⁻¹⁴. Accurate
    /// to better than 10⁻⁹ (checked against the Poisson mixture).
    ///
    /// Finite for every input: an accuracy of 0 is a step (1 within the radius, 0 outside), NaN anywhere or a
    /// radius not above 0 gives 0, a negative distance or accuracy counts as 0, an infinite accuracy gives 0 and
    /// an infinite radius 1 (for a finite distance).
    public static func probabilityInside(distance: Double, radius: Double, accuracy: Double) -> Double {
        guard !distance.isNaN, !radius.isNaN, !accuracy.isNaN, radius > 0 else { return 0 }
        let distance = max(0, distance)
        if radius == .infinity { return distance.isFinite ? 1 : 0 }
        if accuracy == .infinity { return 0 }
        let sigma = standardDeviation(accuracy: max(0, accuracy))
        let a = distance / sigma
        let b = radius / sigma
        guard sigma > 0, a.isFinite, b.isFinite else { return distance <= radius ? 1 : 0 }
        if a == 0 { return -exponentialMinusOne(-b * b / 2) }
        if b >= a + tailWidth { return 1 }
        if b <= a - tailWidth { return 0 }
        return min(1, max(0, riceIntegral(from: max(0, a - tailWidth), to: b, offset: a)))
    }

    /// How many σ of a circular normal distribution's tail are left out: beyond 8σ lies less than 2·10⁻¹⁴.
    private static let tailWidth = 8.0
    /// The width of a quadrature panel, in σ.
    private static let panelWidth = 0.5

    /// ∫ r exp(−(r − a)²/2) I₀e(ar) dr over `lower`…`upper`, on panels of ``panelWidth``.
    private static func riceIntegral(from lower: Double, to upper: Double, offset a: Double) -> Double {
        guard upper > lower else { return 0 }
        let panels = max(1, Int(((upper - lower) / panelWidth).rounded(.up)))
        let width = (upper - lower) / Double(panels)
        var sum = 0.0
        for panel in 0..<panels {
            let middle = lower + (Double(panel) + 0.5) * width
            var panelSum = 0.0
            for (node, weight) in gaussLegendre8 {
                for r in [middle - node * width / 2, middle + node * width / 2] {
                    let offset = r - a
                    panelSum += weight * r * exponential(-offset * offset / 2) * scaledBesselI0(a * r)
                }
            }
            sum += panelSum * width / 2
        }
        return sum
    }

    /// The positive nodes of 8-point Gauss–Legendre quadrature on −1…1, with their weights.
    private static let gaussLegendre8: [(node: Double, weight: Double)] = [
        (0.183_434_642_495_649_8, 0.362_683_783_378_362_0),
        (0.525_532_409_916_329_0, 0.313_706_645_877_887_3),
        (0.796_666_477_413_626_7, 0.222_381_034_453_374_5),
        (0.960_289_856_497_536_3, 0.101_228_536_290_376_3),
    ]

    /// exp(−x) I₀(x) for x ≥ 0: the power series up to 15, the asymptotic series above (both to about 10⁻¹³).
    static func scaledBesselI0(_ x: Double) -> Double {
        if x <= 15 {
            let quarterSquare = x * x / 4
            var term = 1.0
            var sum = 1.0
            var k = 1.0
            while term > sum * 1e-17 {
                term *= quarterSquare / (k * k)
                sum += term
                k += 1
            }
            return sum * exponential(-x)
        }
        var term = 1.0
        var sum = 1.0
        var k = 1.0
        while k < 60 {
            let next = term * (2 * k - 1) * (2 * k - 1) / (8 * x * k)
            guard next < term, next > sum * 1e-17 else { break }
            term = next
            sum += term
            k += 1
        }
        return sum / (2 * Double.pi * x).squareRoot()
    }
}
