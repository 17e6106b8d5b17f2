import Testing
import WhereaboutsCore

@Suite("Signal strength: NetworkManager's percentage and dBm")
struct SignalStrengthTests {
    @Test func theEndsOfTheScaleAreMinus40AndMinus100() {
        #expect(SignalStrength.dBm(fromQuality: 100) == -40)
        #expect(SignalStrength.dBm(fromQuality: 0) == -100)
        #expect(SignalStrength.dBm(fromQuality: 50) == -70)
        #expect(SignalStrength.dBm(fromQuality: 77) == -54)
        #expect(SignalStrength.dBm(fromQuality: 99) == -41)
    }

    @Test func percentagesOutsideTheScaleAreClamped() {
        #expect(SignalStrength.dBm(fromQuality: 255) == -40)
        #expect(SignalStrength.dBm(fromQuality: -3) == -100)
    }

    @Test func matchesNetworkManagersForwardRule() {
        // nm_wifi_utils_level_to_quality: 100 - (int)(100 * |clamp(dBm) + 40| / 60).
        #expect(SignalStrength.quality(fromDBm: -40) == 100)
        #expect(SignalStrength.quality(fromDBm: -30) == 100)
        #expect(SignalStrength.quality(fromDBm: -54) == 77)
        #expect(SignalStrength.quality(fromDBm: -70) == 50)
        #expect(SignalStrength.quality(fromDBm: -100) == 0)
        #expect(SignalStrength.quality(fromDBm: -120) == 0)
    }

    @Test func invertsEveryLevelNetworkManagerDistinguishes() {
        for level in -100 ... -40 {
            let quality = SignalStrength.quality(fromDBm: level)
            #expect(SignalStrength.dBm(fromQuality: quality) == level, "\(level) dBm is \(quality) %")
        }
        for quality in 0...100 {
            let level = SignalStrength.dBm(fromQuality: quality)
            #expect((-100 ... -40).contains(level))
            // The forward rule truncates, so a percentage it never produces maps to a neighbour's level.
            #expect(abs(SignalStrength.quality(fromDBm: level) - quality) <= 1, "\(quality) % is \(level) dBm")
        }
    }
}
