import Glibc
import Testing
import WhereaboutsCore

/// 1 − Q₁(a, b) independently: P(K > J) for independent Poisson K of mean b²/2 and J of mean a²/2 (the
/// noncentral chi-square with 2 degrees of freedom as a Poisson mixture), summed directly.
private func poissonMixture(a: Double, b: Double) -> Double {
    let outer = a * a / 2
    let inner = b * b / 2
    var total = 0.0
    var outerMass = exp(-outer)
    var innerMass = exp(-inner)
    var innerCumulative = innerMass
    for j in 0..<400 {
        if j > 0 {
            outerMass *= outer / Double(j)
            innerMass *= inner / Double(j)
            innerCumulative += innerMass
        }
        total += outerMass * max(0, 1 - innerCumulative)
    }
    return total
}

@Suite("Regions: the probability of being inside")
struct RegionRuleTests {
    let sigma = RegionRule.standardDeviation(accuracy: 1)

    @Test func theStandardDeviationIsTheAccuracyOver2Point4477() {
        #expect(abs(RegionRule.standardDeviation(accuracy: 100) - 100 / 2.447_746_830_680_816) < 1e-9)
    }

    @Test(arguments: [(100.0, 50.0), (100, 100), (100, 250), (1000, 20), (150, 300), (5, 1)])
    func atTheCentreItIsTheClosedForm(radius: Double, accuracy: Double) {
        let sigma = RegionRule.standardDeviation(accuracy: accuracy)
        let expected = 1 - exp(-radius * radius / (2 * sigma * sigma))
        #expect(abs(RegionRule.probabilityInside(distance: 0, radius: radius, accuracy: accuracy) - expected) < 1e-12)
    }

    @Test func aCircleOfTheAccuracyHolds95PercentAtTheCentre() {
        #expect(abs(RegionRule.probabilityInside(distance: 0, radius: 30, accuracy: 30) - 0.95) < 1e-12)
    }

    @Test func itMatchesThePoissonMixtureEverywhere() {
        var worst = 0.0
        for a in stride(from: 0.0, through: 12, by: 0.25) {
            for b in stride(from: 0.25, through: 12, by: 0.25) {
                let probability = RegionRule.probabilityInside(distance: a * 10, radius: b * 10, accuracy: 10 / sigma)
                worst = max(worst, abs(probability - poissonMixture(a: a, b: b)))
            }
        }
        #expect(worst < 1e-9)
    }

    @Test func farFixesAreOutsideAndDeepOnesInside() {
        #expect(RegionRule.probabilityInside(distance: 10_000, radius: 100, accuracy: 50) == 0)
        #expect(RegionRule.probabilityInside(distance: 5_000_000, radius: 100_000, accuracy: 1) == 0)
        #expect(RegionRule.probabilityInside(distance: 10, radius: 100_000, accuracy: 20) == 1)
        // Large in σ but near the boundary: the quadrature still runs and is about a half.
        let boundary = RegionRule.probabilityInside(distance: 100_000, radius: 100_000, accuracy: 2)
        #expect(abs(boundary - 0.5) < 1e-3)
    }

    @Test func anExactFixIsAStep() {
        #expect(RegionRule.probabilityInside(distance: 99.9, radius: 100, accuracy: 0) == 1)
        #expect(RegionRule.probabilityInside(distance: 100, radius: 100, accuracy: 0) == 1)
        #expect(RegionRule.probabilityInside(distance: 100.1, radius: 100, accuracy: 0) == 0)
        #expect(RegionRule.probabilityInside(distance: 100.1, radius: 100, accuracy: 1e-300) == 0)
    }

    @Test func itFallsWithDistance() {
        var previous = 1.0
        for distance in stride(from: 0.0, through: 400, by: 2.5) {
            let probability = RegionRule.probabilityInside(distance: distance, radius: 200, accuracy: 80)
            #expect(probability <= previous + 1e-12)
            previous = probability
        }
    }

    @Test func everyInputGivesAProbability() {
        let values = [-1.0, 0, 1e-300, 1, 100, 1e300, .infinity, -.infinity, .nan, .leastNonzeroMagnitude]
        for distance in values {
            for radius in values {
                for accuracy in values {
                    let probability = RegionRule.probabilityInside(
                        distance: distance, radius: radius, accuracy: accuracy)
                    #expect(probability.isFinite && (0...1).contains(probability), "\(distance) \(radius) \(accuracy)")
                }
            }
        }
    }
}
