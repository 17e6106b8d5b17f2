/// The Schmidt semi-normalised associated Legendre functions P̆ₙᵐ(sin φ′) of a geocentric latitude φ′, up to a degree,
/// with what the magnetic model's sums take from them; arrays are indexed by ``coefficientIndex(degree:order:)``.
///
/// Each is found by the standard recursions: along the diagonal, P̆ₘᵐ from P̆ₘ₋₁ᵐ⁻¹, then down each order, P̆ₙᵐ from
/// P̆ₙ₋₁ᵐ and P̆ₙ₋₂ᵐ.
///
/// The east component divides P̆ₙᵐ by cos φ′, which is zero at the poles; the WMM technical report sums it there by a
/// special case. Here P̆ₙᵐ / cos φ′ (m ≥ 1) has recursions of its own: the diagonal's P̆ₘᵐ is cos φ′ times a multiple of
/// P̆ₘ₋₁ᵐ⁻¹, so P̆ₘᵐ / cos φ′ is that multiple, and the recursion down an order is linear, so it carries the quotient as
/// it carries P̆. Nothing is divided by cos φ′, and the poles are no special case.
struct SchmidtLegendreFunctions: Sendable {
    /// P̆ₙᵐ(sin φ′).
    private(set) var value: [Double]
    /// dP̆ₙᵐ(sin φ′)/dφ′, the derivative with respect to the geocentric latitude.
    private(set) var derivative: [Double]
    /// P̆ₙᵐ(sin φ′) / cos φ′, for m ≥ 1; 0 for m = 0, whose east terms are multiplied by m.
    private(set) var valueOverCosine: [Double]

    /// The functions of degree 0 to `degree` at the latitude whose sine and cosine (never negative) are given.
    init(degree: Int, sineOfLatitude x: Double, cosineOfLatitude c: Double) {
        let count = coefficientIndex(degree: degree, order: degree) + 1
        value = Array(repeating: 0, count: count)
        derivative = Array(repeating: 0, count: count)
        valueOverCosine = Array(repeating: 0, count: count)
        value[0] = 1
        for m in 0...degree {
            if m > 0 { fillDiagonal(order: m, sineOfLatitude: x, cosineOfLatitude: c) }
            for n in stride(from: m + 1, through: degree, by: 1) {
                fill(degree: n, order: m, sineOfLatitude: x, cosineOfLatitude: c)
            }
        }
    }

    /// P̆ₘᵐ = k cos φ′ P̆ₘ₋₁ᵐ⁻¹, where k is √((2m − 1)/(2m)), or 1 for m = 1: Schmidt's normalisation of order 0
    /// lacks the √2 of the other orders.
    private mutating func fillDiagonal(order m: Int, sineOfLatitude x: Double, cosineOfLatitude c: Double) {
        let index = coefficientIndex(degree: m, order: m)
        let previous = coefficientIndex(degree: m - 1, order: m - 1)
        let k = m == 1 ? 1 : (Double(2 * m - 1) / Double(2 * m)).squareRoot()
        value[index] = k * c * value[previous]
        derivative[index] = k * (c * derivative[previous] - x * value[previous])
        valueOverCosine[index] = k * value[previous]
    }

    /// P̆ₙᵐ = ((2n − 1) sin φ′ P̆ₙ₋₁ᵐ − √((n − 1)² − m²) P̆ₙ₋₂ᵐ) / √(n² − m²), for n > m, with P̆ₘ₋₁ᵐ = 0.
    private mutating func fill(degree n: Int, order m: Int, sineOfLatitude x: Double, cosineOfLatitude c: Double) {
        let index = coefficientIndex(degree: n, order: m)
        let previous = coefficientIndex(degree: n - 1, order: m)
        let scale = Double(n * n - m * m).squareRoot()
        let a = Double(2 * n - 1) / scale
        let b = Double((n - 1) * (n - 1) - m * m).squareRoot() / scale
        var twoBack = (value: 0.0, derivative: 0.0, valueOverCosine: 0.0)
        if n - 2 >= m {
            let twoBackIndex = coefficientIndex(degree: n - 2, order: m)
            twoBack = (value[twoBackIndex], derivative[twoBackIndex], valueOverCosine[twoBackIndex])
        }
        value[index] = a * x * value[previous] - b * twoBack.value
        derivative[index] = a * (x * derivative[previous] + c * value[previous]) - b * twoBack.derivative
        valueOverCosine[index] = a * x * valueOverCosine[previous] - b * twoBack.valueOverCosine
    }
}
