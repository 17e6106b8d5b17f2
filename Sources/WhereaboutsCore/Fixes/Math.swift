// The C library's math functions, the only platform code the domain uses; other files call these wrappers.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@inline(__always) func sinHalfSquared(_ angle: Double) -> Double {
    let s = sin(angle / 2)
    return s * s
}

@inline(__always) func cosine(_ angle: Double) -> Double { cos(angle) }

@inline(__always) func arcsine(_ value: Double) -> Double { asin(value) }

@inline(__always) func floorOf(_ value: Double) -> Double { floor(value) }

@inline(__always) func sine(_ angle: Double) -> Double { sin(angle) }

@inline(__always) func exponential(_ value: Double) -> Double { exp(value) }

@inline(__always) func exponentialMinusOne(_ value: Double) -> Double { expm1(value) }

@inline(__always) func naturalLogarithm(_ value: Double) -> Double { log(value) }

@inline(__always) func arcTangent(_ y: Double, _ x: Double) -> Double { atan2(y, x) }
