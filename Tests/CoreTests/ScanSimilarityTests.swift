import Testing
import WhereaboutsCore

/// Sightings of the access points numbered by the keys at the values' signals.
private func sightings(_ signals: [Int: Int]) -> [AccessPointSighting] {
    WiFiFixtures.scan(signals).map(\.sighting)
}

/// The comparison with the throttle's thresholds.
private func compare(_ first: [Int: Int], _ second: [Int: Int]) -> ScanSimilarity {
    ScanSimilarity(sightings(first), sightings(second), anchorSignal: -80, minimumAnchors: 3)
}

@Suite("Scan similarity")
struct ScanSimilarityTests {
    @Test func identicalScansAreFullySimilar() {
        let scan = [1: -50, 2: -60, 3: -70, 4: -90]
        #expect(
            compare(scan, scan)
                == ScanSimilarity(sightings(scan), sightings(scan), anchorSignal: -80, minimumAnchors: 3))
        #expect(compare(scan, scan).similarity == 1)
        #expect(compare(scan, scan).shared == 3 && compare(scan, scan).compared == 3)
    }

    @Test func anAnchorMatchesAnySightingInTheOtherScan() {
        // Access point 3 fell below the anchor threshold but is still heard: it still matches.
        let result = compare([1: -50, 2: -60, 3: -78], [1: -55, 2: -58, 3: -86, 4: -99])
        #expect(result.similarity == 1 && result.compared == 3)
    }

    @Test func weakAccessPointsComingAndGoingDoNotCount() {
        let result = compare([1: -50, 2: -60, 3: -70, 9: -91], [1: -50, 2: -60, 3: -70, 8: -88, 7: -95])
        #expect(result.similarity == 1)
    }

    @Test func newAndLostAnchorsLowerTheSimilarity() {
        let result = compare([1: -50, 2: -60, 3: -70, 4: -75], [1: -50, 2: -60, 5: -55, 6: -65])
        #expect(result.shared == 2 && result.compared == 6)
        #expect(result.similarity == 2.0 / 6)
        #expect(compare([1: -50, 2: -60, 3: -70], [4: -50, 5: -60, 6: -70]).similarity == 0)
    }

    @Test func aScanOfWeakAccessPointsIsAnchoredByItsStrongest() {
        let result = compare([1: -85, 2: -88, 3: -90, 4: -97], [1: -89, 2: -84, 3: -93])
        #expect(result.compared == 3 && result.similarity == 1)
        let lost = compare([1: -85, 2: -88, 3: -90, 4: -97], [4: -90, 5: -86, 6: -91])
        #expect(lost.compared == 6 && lost.shared == 1)
    }

    @Test func repeatedAddressesCountOnceAtTheirStrongest() {
        let first =
            sightings([1: -50, 2: -60]) + [
                AccessPointSighting(bssid: WiFiFixtures.bssid(3), signal: -95),
                AccessPointSighting(bssid: WiFiFixtures.bssid(3), signal: -60),
            ]
        let result = ScanSimilarity(first, sightings([1: -50, 2: -60, 3: -90]), anchorSignal: -80, minimumAnchors: 3)
        #expect(result.compared == 3 && result.similarity == 1)
        #expect(ScanSimilarity([], [], anchorSignal: -80, minimumAnchors: 3).similarity == 0)
    }
}
