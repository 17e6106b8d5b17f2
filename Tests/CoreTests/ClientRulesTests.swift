import Testing
import WhereaboutsCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - Helpers

/// 2023-11-14T22:13:20Z, a fixed epoch for the fixes below.
private let epoch: Int64 = 1_700_000_000_000_000

/// A fix at `latitude`, `longitude`, measured `seconds` after ``epoch``.
private func fix(_ latitude: Double, _ longitude: Double, at seconds: Double = 0, accuracy: Double = 5) -> Fix {
    Fix(
        latitude: latitude, longitude: longitude, horizontalAccuracy: accuracy,
        timestamp: WallTime(microseconds: epoch + Int64((seconds * 1_000_000).rounded())), provider: .replay,
        description: "test")
}

/// A fix measured `microseconds` after ``epoch``.
private func fix(_ latitude: Double, _ longitude: Double, microseconds: Int64) -> Fix {
    Fix(
        latitude: latitude, longitude: longitude, horizontalAccuracy: 5,
        timestamp: WallTime(microseconds: epoch + microseconds), provider: .replay, description: "test")
}

/// Metres per degree of latitude on the mean-radius sphere the domain measures distances on.
private let metresPerDegree = meanEarthRadius * Double.pi / 180

/// The smallest latitude north of the equator (on the prime meridian) that is at least `metres` from (0, 0) by
/// ``greatCircleDistance``: the closest a fix can get to sitting exactly on a distance threshold.
private func latitudeAtLeast(_ metres: Double) -> Double {
    var latitude = metres / metresPerDegree
    while greatCircleDistance(0, 0, latitude, 0) < metres { latitude = latitude.nextUp }
    while greatCircleDistance(0, 0, latitude.nextDown, 0) >= metres { latitude = latitude.nextDown }
    return latitude
}

/// Feeds `fixes` through `thresholds` the way a client does, remembering only *signalled* fixes; returns the
/// indices of the fixes that were signalled.
private func signalledIndices(_ fixes: [Fix], _ thresholds: Thresholds) -> [Int] {
    var lastSignalled: Fix?
    var signalled: [Int] = []
    for (index, candidate) in fixes.enumerated()
    where thresholds.decide(candidate, lastSignalled: lastSignalled) == .signal {
        signalled.append(index)
        lastSignalled = candidate
    }
    return signalled
}

/// A fix `metres` north of the equator, `seconds` after the epoch.
private func north(_ metres: Double, at seconds: Double = 0) -> Fix { fix(metres / metresPerDegree, 0, at: seconds) }

// MARK: - Thresholds

@Suite struct ThresholdTests {
    @Test func firstFixAlwaysSignals() {
        let first = fix(52.52, 13.405)
        for thresholds in [
            Thresholds(), Thresholds(distance: 1000), Thresholds(time: 60), Thresholds(distance: 1000, time: 60),
            Thresholds(distance: .max, time: .max),
        ] {
            #expect(thresholds.decide(first, lastSignalled: nil) == .signal)
        }
    }

    @Test func defaultsAreZero() {
        #expect(Thresholds() == Thresholds(distance: 0, time: 0))
    }

    @Test func zeroThresholdsSignalEveryFix() {
        let last = fix(52.52, 13.405)
        let zero = Thresholds(distance: 0, time: 0)
        #expect(zero.decide(last, lastSignalled: last) == .signal)
        #expect(zero.decide(fix(52.52, 13.405, at: 0.001), lastSignalled: last) == .signal)
        #expect(zero.decide(fix(52.5201, 13.405), lastSignalled: last) == .signal)
        #expect(signalledIndices((0..<20).map { north(Double($0), at: Double($0) / 10) }, zero) == Array(0..<20))
    }

    @Test func distanceAlone() {
        let last = north(0)
        let thresholds = Thresholds(distance: 100)
        #expect(thresholds.decide(north(0), lastSignalled: last) == .updateInPlace)
        #expect(thresholds.decide(north(50), lastSignalled: last) == .updateInPlace)
        #expect(thresholds.decide(north(99.9), lastSignalled: last) == .updateInPlace)
        #expect(thresholds.decide(north(100.1), lastSignalled: last) == .signal)
        #expect(thresholds.decide(north(5_000), lastSignalled: last) == .signal)
        // Time plays no part: the same place much later is still held back, and a far place at once is signalled.
        #expect(thresholds.decide(north(10, at: 86_400), lastSignalled: last) == .updateInPlace)
        #expect(thresholds.decide(north(200, at: 0), lastSignalled: last) == .signal)
        // Direction does not matter.
        #expect(thresholds.decide(fix(0, 150 / metresPerDegree), lastSignalled: last) == .signal)
        #expect(thresholds.decide(fix(-50 / metresPerDegree, 0), lastSignalled: last) == .updateInPlace)
    }

    @Test func timeAlone() {
        let last = north(0, at: 0)
        let thresholds = Thresholds(time: 10)
        #expect(thresholds.decide(north(0, at: 0), lastSignalled: last) == .updateInPlace)
        #expect(thresholds.decide(north(0, at: 9.999_999), lastSignalled: last) == .updateInPlace)
        #expect(thresholds.decide(north(0, at: 10.5), lastSignalled: last) == .signal)
        // Distance plays no part: far away but too soon is held back.
        #expect(thresholds.decide(north(100_000, at: 1), lastSignalled: last) == .updateInPlace)
        #expect(thresholds.decide(north(0, at: 3_600), lastSignalled: last) == .signal)
    }

    @Test func timeIsMeasuredInEitherDirection() {
        // GeoClue compares the absolute difference, so a fix that is older than the signalled one counts too.
        let last = north(0, at: 100)
        let thresholds = Thresholds(time: 10)
        #expect(thresholds.decide(north(0, at: 95), lastSignalled: last) == .updateInPlace)
        #expect(thresholds.decide(north(0, at: 90), lastSignalled: last) == .signal)
        #expect(thresholds.decide(north(0, at: 0), lastSignalled: last) == .signal)
    }

    @Test func bothMustBeMet() {
        let last = north(0, at: 0)
        let thresholds = Thresholds(distance: 100, time: 10)
        #expect(thresholds.decide(north(50, at: 5), lastSignalled: last) == .updateInPlace)
        #expect(thresholds.decide(north(500, at: 5), lastSignalled: last) == .updateInPlace, "far enough, too soon")
        #expect(thresholds.decide(north(50, at: 50), lastSignalled: last) == .updateInPlace, "late enough, too close")
        #expect(thresholds.decide(north(500, at: 50), lastSignalled: last) == .signal)
        #expect(thresholds.decide(north(100.1, at: 10), lastSignalled: last) == .signal)
    }

    @Test func distanceExactlyAtTheThresholdSignals() {
        for metres: UInt32 in [1, 15, 100, 1000, 25_000] {
            let onThreshold = latitudeAtLeast(Double(metres))
            let last = fix(0, 0)
            let thresholds = Thresholds(distance: metres)
            // "Below threshold" is strictly less than: the first position at the threshold is signalled ...
            #expect(thresholds.decide(fix(onThreshold, 0), lastSignalled: last) == .signal, "\(metres) m")
            // ... and the one just inside it is not.
            #expect(
                thresholds.decide(fix(onThreshold.nextDown, 0), lastSignalled: last) == .updateInPlace, "\(metres) m")
        }
        // Where the double grid allows it, exactly the threshold distance.
        #expect(greatCircleDistance(0, 0, latitudeAtLeast(100), 0) - 100 < 1e-9)
    }

    @Test func timeExactlyAtTheThresholdSignals() {
        let last = fix(0, 0, microseconds: 0)
        for seconds: UInt32 in [1, 3, 60, 86_400] {
            let thresholds = Thresholds(time: seconds)
            let exactly = Int64(seconds) * 1_000_000
            #expect(thresholds.decide(fix(0, 0, microseconds: exactly), lastSignalled: last) == .signal)
            #expect(thresholds.decide(fix(0, 0, microseconds: exactly - 1), lastSignalled: last) == .updateInPlace)
            #expect(thresholds.decide(fix(0, 0, microseconds: -exactly), lastSignalled: last) == .signal)
            #expect(thresholds.decide(fix(0, 0, microseconds: -exactly + 1), lastSignalled: last) == .updateInPlace)
        }
    }

    @Test func maximalThresholds() {
        let last = fix(0, 0, microseconds: 0)
        // No two places on Earth are UInt32.max metres apart: after the first fix, everything is held back.
        let distance = Thresholds(distance: .max)
        #expect(distance.decide(fix(0, 180), lastSignalled: last) == .updateInPlace)
        #expect(distance.decide(fix(-90, 0), lastSignalled: last) == .updateInPlace)
        // UInt32.max seconds (about 136 years) does not overflow.
        let time = Thresholds(time: .max)
        let limit = Int64(UInt32.max) * 1_000_000
        #expect(
            time.decide(fix(0, 0, microseconds: 100 * 365 * 86_400 * 1_000_000), lastSignalled: last) == .updateInPlace)
        #expect(time.decide(fix(0, 0, microseconds: limit - 1), lastSignalled: last) == .updateInPlace)
        #expect(time.decide(fix(0, 0, microseconds: limit), lastSignalled: last) == .signal)
        let both = Thresholds(distance: .max, time: .max)
        #expect(both.decide(fix(0, 180, microseconds: limit), lastSignalled: last) == .updateInPlace)
        #expect(both.decide(fix(0, 180, microseconds: limit), lastSignalled: nil) == .signal)
    }

    @Test func distanceIsMeasuredFromTheLastSignalledFix() {
        // Walking north 10 m per fix with a 25 m threshold: each fix is only 10 m from the one before, but the
        // distance adds up from the last *signalled* fix, so every third fix is signalled.
        let walk = (0..<13).map { north(Double($0) * 10, at: Double($0)) }
        #expect(signalledIndices(walk, Thresholds(distance: 25)) == [0, 3, 6, 9, 12])
        // Measured from the previous fix instead, nothing after the first would ever be signalled.
        #expect(Thresholds(distance: 25).decide(walk[3], lastSignalled: walk[2]) == .updateInPlace)
    }

    @Test func timeIsMeasuredFromTheLastSignalledFix() {
        let fixes = (0..<10).map { north(0, at: Double($0)) }
        #expect(signalledIndices(fixes, Thresholds(time: 3)) == [0, 3, 6, 9])
    }

    @Test func combinedSequenceNeedsBoth() {
        // 10 m and 1 s per fix; a signal needs 25 m (3 fixes) and 5 s (5 fixes).
        let walk = (0..<16).map { north(Double($0) * 10, at: Double($0)) }
        #expect(signalledIndices(walk, Thresholds(distance: 25, time: 5)) == [0, 5, 10, 15])
        // Standing still: the distance threshold holds everything back however long it takes.
        let still = (0..<16).map { north(0, at: Double($0) * 60) }
        #expect(signalledIndices(still, Thresholds(distance: 25, time: 5)) == [0])
    }
}

// MARK: - LocationLedger

@Suite struct LocationLedgerTests {
    @Test func startsEmpty() {
        let ledger = LocationLedger()
        #expect(ledger.nextIndex == 0)
        #expect(ledger.current == nil)
        #expect(ledger.previous == nil)
        #expect(ledger.live.isEmpty)
        #expect(ledger.nextExpiry == nil)
    }

    @Test func indicesCountFromZeroAndReportTheOldPath() {
        let clock = ManualClock()
        var ledger = LocationLedger()
        let first = ledger.advance(now: clock.monotonicNow)
        #expect(first.new == 0)
        #expect(first.old == nil)
        #expect(first.released.isEmpty)
        #expect(ledger.current == 0)
        #expect(ledger.live == [0])
        for expected: UInt32 in 1..<10 {
            clock.advance(by: .milliseconds(100))
            let step = ledger.advance(now: clock.monotonicNow)
            #expect(step.new == expected)
            #expect(step.old == expected - 1)
            #expect(ledger.current == expected)
            #expect(ledger.previous == expected - 1)
            #expect(ledger.nextIndex == expected + 1)
            // The old path of the signal is still there to read.
            #expect(ledger.live.contains(expected - 1))
        }
    }

    @Test func atMostFourLiveObjectsHoweverManyAdvances() {
        let clock = ManualClock()
        var ledger = LocationLedger()
        var released: [UInt32] = []
        for _ in 0..<1_000 {
            let step = ledger.advance(now: clock.monotonicNow)
            released += step.released
            #expect(ledger.live.count <= 4)
            #expect(ledger.retiring.count <= LocationLedger.maximumRetiring)
            #expect(ledger.live.contains(step.new))
            if let old = step.old { #expect(ledger.live.contains(old)) }
            #expect(!step.released.contains(step.new))
            #expect(step.old.map { !step.released.contains($0) } ?? true)
        }
        #expect(ledger.live.count == 4)
        // Nothing leaks and nothing is released twice: every index is either released or still live, once.
        #expect(released.count == Set(released).count)
        #expect(Set(released).union(ledger.live) == Set(0..<1_000))
        #expect(Set(released).isDisjoint(with: ledger.live))
        // Forced early releases go oldest first.
        #expect(released == released.sorted())
    }

    @Test func olderObjectsExpireAfterTheGracePeriod() {
        #expect(LocationLedger.grace == .seconds(5))
        let clock = ManualClock()
        var ledger = LocationLedger()
        _ = ledger.advance(now: clock.monotonicNow)  // 0 current
        clock.advance(by: .seconds(1))
        _ = ledger.advance(now: clock.monotonicNow)  // 1 current, 0 previous
        #expect(ledger.nextExpiry == nil, "current and previous do not expire")
        #expect(ledger.expire(now: clock.monotonicNow + .seconds(3_600)).isEmpty)
        clock.advance(by: .seconds(1))
        let retiredAt = clock.monotonicNow
        _ = ledger.advance(now: retiredAt)  // 2 current, 1 previous, 0 retiring
        #expect(ledger.live.sorted() == [0, 1, 2])
        #expect(ledger.nextExpiry == retiredAt + .seconds(5))

        clock.advance(by: .milliseconds(4_999))
        #expect(ledger.expire(now: clock.monotonicNow).isEmpty)
        #expect(ledger.live.contains(0))
        clock.advance(by: .milliseconds(1))
        #expect(ledger.expire(now: clock.monotonicNow) == [0])
        #expect(ledger.live.sorted() == [1, 2])
        #expect(ledger.nextExpiry == nil)
        #expect(ledger.expire(now: clock.monotonicNow).isEmpty, "released once only")
    }

    @Test func nextExpiryIsTheEarliest() {
        let clock = ManualClock()
        var ledger = LocationLedger()
        for _ in 0..<3 { _ = ledger.advance(now: clock.monotonicNow) }  // 0 retiring from t=0
        let firstRetired = clock.monotonicNow
        clock.advance(by: .seconds(2))
        _ = ledger.advance(now: clock.monotonicNow)  // 1 retiring from t=2
        #expect(ledger.retiring.map(\.index) == [0, 1])
        #expect(ledger.nextExpiry == firstRetired + .seconds(5))
        clock.advance(by: .seconds(3))  // t=5
        #expect(ledger.expire(now: clock.monotonicNow) == [0])
        #expect(ledger.nextExpiry == clock.monotonicNow + .seconds(2))
        clock.advance(by: .seconds(2))  // t=7
        #expect(ledger.expire(now: clock.monotonicNow) == [1])
        #expect(ledger.nextExpiry == nil)
        #expect(ledger.live.sorted() == [2, 3])
    }

    @Test func expiryCatchesUpAfterALongPause() {
        let clock = ManualClock()
        var ledger = LocationLedger()
        for _ in 0..<4 {
            _ = ledger.advance(now: clock.monotonicNow)
            clock.advance(by: .milliseconds(500))
        }
        #expect(ledger.retiring.map(\.index) == [0, 1])
        clock.advance(by: .seconds(60))
        #expect(ledger.expire(now: clock.monotonicNow).sorted() == [0, 1])
        #expect(ledger.live.sorted() == [2, 3])
    }

    @Test func rapidUpdatesReleaseEarlyButKeepTheOldPathReadable() {
        // Two updates a second, as GeoClue gives for RMC+GGA: the bound wins over the grace period.
        let clock = ManualClock()
        var ledger = LocationLedger()
        var lastOld: UInt32?
        for _ in 0..<20 {
            let step = ledger.advance(now: clock.monotonicNow)
            _ = ledger.expire(now: clock.monotonicNow)
            if let lastOld {
                #expect(ledger.live.contains(lastOld), "the previous signal's old path outlives one more update")
            }
            lastOld = step.old
            #expect(ledger.live.count <= 4)
            clock.advance(by: .milliseconds(500))
        }
    }
}

// MARK: - coarsen

/// A fix with every optional value set, to see what coarsening keeps.
private func richFix(_ latitude: Double, _ longitude: Double, accuracy: Double = 8) -> Fix {
    Fix(
        latitude: latitude, longitude: longitude, horizontalAccuracy: accuracy, altitude: 34.5,
        ellipsoidalAltitude: 78.9, verticalAccuracy: 12, speed: 3.2, speedAccuracy: 0.4, course: 271.5,
        courseAccuracy: 9, timestamp: WallTime(microseconds: epoch + 123_456), provider: .nmea,
        description: "GPS receiver", isSimulated: true)
}

/// The position `metres` away from (`latitude`, `longitude`) towards `bearing` degrees, on a local flat projection.
private func offset(_ latitude: Double, _ longitude: Double, metres: Double, bearing: Double) -> (Double, Double) {
    let radians = bearing * Double.pi / 180
    let dLatitude = metres * cos(radians) / metresPerDegree
    let dLongitude = metres * sin(radians) / (metresPerDegree * cos(latitude * Double.pi / 180))
    return (latitude + dLatitude, longitude + dLongitude)
}

private let coarseLevels: [AccuracyLevel] = [.none, .country, .city, .neighborhood, .street]

/// Places on several continents and latitudes, clear of the poles.
private let places: [(Double, Double)] = [
    (52.520008, 13.404954),  // Berlin
    (-0.180653, -78.467834),  // Quito, near the equator
    (-33.868820, 151.209296),  // Sydney
    (64.146582, -21.942635),  // Reykjavík
    (78.223172, 15.626723),  // Longyearbyen
    (0, 0),
    (-54.801912, -68.302951),  // Ushuaia
    (35.689487, 139.691706),  // Tokyo
]

@Suite struct CoarsenTests {
    @Test func exactIsUnchanged() {
        for (latitude, longitude) in places + [(90, 180), (-90, -180)] {
            let fix = richFix(latitude, longitude)
            #expect(coarsen(fix, to: .exact) == fix)
        }
    }

    @Test(arguments: coarseLevels)
    func dropsRevealingValuesAndKeepsTheRest(_ level: AccuracyLevel) {
        let original = richFix(52.520008, 13.404954)
        let coarse = coarsen(original, to: level)
        #expect(coarse.altitude == nil)
        #expect(coarse.ellipsoidalAltitude == nil)
        #expect(coarse.verticalAccuracy == nil)
        #expect(coarse.speed == nil)
        #expect(coarse.speedAccuracy == nil)
        #expect(coarse.course == nil)
        #expect(coarse.courseAccuracy == nil)
        #expect(coarse.timestamp == original.timestamp)
        #expect(coarse.provider == original.provider)
        #expect(coarse.description == original.description)
        #expect(coarse.isSimulated == original.isSimulated)
        #expect(coarse.latitude != original.latitude || coarse.longitude != original.longitude)
    }

    @Test(arguments: coarseLevels)
    func accuracyIsAtLeastTheNominalRadius(_ level: AccuracyLevel) {
        for (latitude, longitude) in places {
            for accuracy in [0.0, 1, 50, level.nominalRadius / 2, level.nominalRadius * 3] {
                let coarse = coarsen(richFix(latitude, longitude, accuracy: accuracy), to: level)
                #expect(coarse.horizontalAccuracy >= level.nominalRadius)
                #expect(coarse.horizontalAccuracy >= accuracy)
                #expect(coarse.horizontalAccuracy.isFinite)
            }
        }
    }

    @Test func nominalRadii() {
        #expect(AccuracyLevel.country.nominalRadius == 300_000)
        #expect(AccuracyLevel.city.nominalRadius == 15_000)
        #expect(AccuracyLevel.neighborhood.nominalRadius == 3_000)
        #expect(AccuracyLevel.street.nominalRadius == 1_000)
        #expect(AccuracyLevel.exact.nominalRadius == 0)
    }

    @Test(arguments: coarseLevels)
    func nearbyFixesInOneCellGiveIdenticalOutput(_ level: AccuracyLevel) {
        let cell = level.nominalRadius
        for (latitude, longitude) in places {
            let centre = coarsen(fix(latitude, longitude, accuracy: 20), to: level)
            // The centre maps to itself ...
            #expect(coarsen(fix(centre.latitude, centre.longitude, accuracy: 20), to: level) == centre)
            // ... and so does every fix well inside its cell, at any time: nothing to average out.
            var outputs: Set<[Double]> = []
            for ring in 1...6 {
                for step in 0..<24 {
                    let (lat, lon) = offset(
                        centre.latitude, centre.longitude, metres: cell * 0.05 * Double(ring),
                        bearing: Double(step) * 15)
                    let coarse = coarsen(fix(lat, lon, at: Double(ring * 100 + step), accuracy: 20), to: level)
                    outputs.insert([coarse.latitude, coarse.longitude, coarse.horizontalAccuracy])
                }
            }
            #expect(
                outputs == [[centre.latitude, centre.longitude, centre.horizontalAccuracy]],
                "\(level) at \(latitude), \(longitude)")
        }
    }

    @Test(arguments: coarseLevels)
    func outputIsTheCentreOfTheCellHoldingTheFix(_ level: AccuracyLevel) {
        let cell = level.nominalRadius
        for (latitude, longitude) in places {
            for ring in 0...4 {
                for step in 0..<8 {
                    let (lat, lon) = offset(
                        latitude, longitude, metres: cell * 0.37 * Double(ring), bearing: Double(step) * 45 + 10)
                    let coarse = coarsen(fix(lat, lon, accuracy: 0), to: level)
                    // North-south: within half a cell of the fix, on a fixed grid of cell-sized rows.
                    let northSouth = abs(coarse.latitude - lat) * metresPerDegree
                    #expect(northSouth <= cell / 2, "\(level) \(lat), \(lon)")
                    let row = coarse.latitude / (cell / 111_320) - 0.5
                    #expect(abs(row - row.rounded()) < 1e-6, "\(level) \(lat), \(lon): not a row centre")
                    // East-west: within half a cell, measured along the cell's centre latitude.
                    var dLongitude = abs(coarse.longitude - lon)
                    if dLongitude > 180 { dLongitude = 360 - dLongitude }
                    let eastWest = dLongitude * metresPerDegree * cos(coarse.latitude * Double.pi / 180)
                    #expect(eastWest <= cell / 2, "\(level) \(lat), \(lon)")
                    // The true position lies inside the reported circle.
                    #expect(coarse.distance(to: fix(lat, lon)) <= coarse.horizontalAccuracy)
                }
            }
        }
    }

    @Test(arguments: coarseLevels)
    func differentCellsGiveDifferentOutputs(_ level: AccuracyLevel) {
        let cell = level.nominalRadius
        let here = coarsen(fix(52.52, 13.40), to: level)
        let (lat, lon) = offset(52.52, 13.40, metres: cell * 3, bearing: 0)
        let there = coarsen(fix(lat, lon), to: level)
        #expect(here.latitude != there.latitude)
        #expect(abs(there.distance(to: here) - cell * 3) <= cell)
    }

    @Test(arguments: coarseLevels)
    func staysInRangeNearThePoles(_ level: AccuracyLevel) {
        var latitudes: [Double] = [90, -90, 89.999_999, -89.999_999, 89.9, -89.9, 89.5, -89.5, 88, -88, 85, -85]
        latitudes += latitudes.map { $0.nextDown }.filter { $0 >= -90 }
        for latitude in latitudes {
            for longitude in stride(from: -180.0, through: 180, by: 22.5) {
                let coarse = coarsen(fix(latitude, longitude, accuracy: 0), to: level)
                #expect((-90...90).contains(coarse.latitude), "\(level) \(latitude), \(longitude)")
                #expect((-180...180).contains(coarse.longitude), "\(level) \(latitude), \(longitude)")
                #expect(coarse.horizontalAccuracy.isFinite)
                #expect(
                    coarse.distance(to: fix(latitude, longitude)) <= coarse.horizontalAccuracy,
                    "\(level) \(latitude), \(longitude)")
            }
        }
    }

    @Test(arguments: coarseLevels)
    func staysInRangeAtTheAntimeridian(_ level: AccuracyLevel) {
        let longitudes: [Double] = [
            180, -180, 179.999_999, -179.999_999, 179.99, -179.99, 179.9, -179.9, 179.5, -179.5, 180.0.nextDown,
            (-180.0).nextUp,
        ]
        for latitude in [0.0, 0.1, -16.5, 45, -45, 65.8, -65.8, 80, -80] {
            for longitude in longitudes {
                let coarse = coarsen(fix(latitude, longitude, accuracy: 0), to: level)
                #expect((-90...90).contains(coarse.latitude), "\(level) \(latitude), \(longitude)")
                #expect((-180...180).contains(coarse.longitude), "\(level) \(latitude), \(longitude)")
                // The result stays near the fix: it does not jump to the other side of the globe.
                let moved = coarse.distance(to: fix(latitude, longitude))
                #expect(moved <= coarse.horizontalAccuracy, "\(level) \(latitude), \(longitude): moved \(moved) m")
            }
        }
    }

    /// The positions where the coarse circle does not hold the input's whole 95% circle, i.e. where
    /// distance + input accuracy > output accuracy.
    private static func violations(_ level: AccuracyLevel, latitudes: ClosedRange<Double>, accuracy: Double) -> [String]
    {
        var found: [String] = []
        let cell = level.nominalRadius / 111_320
        for i in 0...60 {
            let latitude = latitudes.lowerBound + (latitudes.upperBound - latitudes.lowerBound) * Double(i) / 60
            for j in 0...60 {
                let longitude = 10 + 3 * cell * Double(j) / 60
                let coarse = coarsen(fix(latitude, longitude, accuracy: accuracy), to: level)
                let excess = coarse.distance(to: fix(latitude, longitude)) + accuracy - coarse.horizontalAccuracy
                if excess > 0 { found.append("\(latitude), \(longitude): \(Int(excess)) m short") }
            }
        }
        return found
    }

    @Test func coarseCircleHoldsTheInputCircleNearTheEquator() {
        for level in coarseLevels {
            let v = Self.violations(level, latitudes: -2...2, accuracy: level.nominalRadius)
            let count = v.count
            #expect(count == 0, "\(level), e.g. \(v.prefix(3))")
        }
    }

    /// The widened accuracy covers the cell's farthest corner, measured on its equator-side edge where the cell is
    /// widest, so the reported circle always holds the input's own 95% circle, even far from the equator.
    @Test func coarseCircleHoldsTheInputCircleAwayFromTheEquator() {
        let v =
            Self.violations(.country, latitudes: 44...62, accuracy: 150_000)
            + Self.violations(.country, latitudes: 84...88, accuracy: 150_000)
        let count = v.count
        #expect(count == 0, "e.g. \(v.prefix(3))")
    }
}

// MARK: - AccuracyLevel

@Suite struct AccuracyLevelTests {
    @Test(arguments: [
        (UInt32(0), AccuracyLevel.country),
        (1, .country),
        (2, .country),
        (3, .country),
        (4, .city),
        (5, .neighborhood),
        (6, .street),
        (7, .street),
        (8, .exact),
        (9, .exact),
        (100, .exact),
        (UInt32.max, .exact),
    ])
    func clampsRequestedLevelsAsGeoClue26(_ raw: UInt32, _ expected: AccuracyLevel) {
        #expect(AccuracyLevel(clampingRequested: raw) == expected)
    }

    @Test func definedLevelsMapToThemselvesExceptNone() {
        for level in AccuracyLevel.allCases where level != .none {
            #expect(AccuracyLevel(clampingRequested: level.rawValue) == level)
        }
        #expect(AccuracyLevel(clampingRequested: AccuracyLevel.none.rawValue) == .country)
    }

    @Test func wireValuesAndOrder() {
        #expect(AccuracyLevel.allCases.map(\.rawValue) == [0, 1, 4, 5, 6, 8])
        #expect(AccuracyLevel.allCases == AccuracyLevel.allCases.sorted())
        #expect(AccuracyLevel(rawValue: 2) == nil)
        #expect(AccuracyLevel(rawValue: 3) == nil)
        #expect(AccuracyLevel(rawValue: 7) == nil)
        #expect(AccuracyLevel.city < .exact)
        #expect(!(AccuracyLevel.exact < .exact))
    }
}
