import Testing
import WhereaboutsCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - Helpers

/// A fusion run driven by a manual clock (shared with `SourceAgreementTests`): fixes are placed in metres around a reference point and timed in
/// seconds, and each is offered as the daemon offers it, at the clock's current monotonic time.
final class Fusion {
    /// 48° N 11° E, where the positions below are measured from.
    static let origin = (latitude: 48.0, longitude: 11.0)
    /// Metres per degree of latitude on the sphere the domain measures distances on.
    static let metresPerDegree = meanEarthRadius * Double.pi / 180

    let clock = ManualClock()
    var selector = FixSelector()
    /// The wall time the scenario starts at; fix times are seconds after it.
    let start: WallTime

    init() { start = clock.wallNow }

    /// A fix `north` and `east` metres from ``origin``, measured `at` seconds after the start (default: now).
    func fix(
        _ provider: ProviderKind, north: Double = 0, east: Double = 0, accuracy: Double, at seconds: Double? = nil
    ) -> Fix {
        let latitude = Fusion.origin.latitude + north / Fusion.metresPerDegree
        let longitude =
            Fusion.origin.longitude + east / (Fusion.metresPerDegree * cos(Fusion.origin.latitude * Double.pi / 180))
        let timestamp =
            seconds.map { start.advanced(by: .microseconds(Int64(($0 * 1_000_000).rounded()))) } ?? clock.wallNow
        return Fix(
            latitude: latitude, longitude: longitude, horizontalAccuracy: accuracy, timestamp: timestamp,
            provider: provider, description: "\(provider.rawValue) test fix")
    }

    /// Offers `fix` now; true when it was accepted.
    @discardableResult
    func offer(_ fix: Fix) -> Bool { selector.offer(fix, now: clock.monotonicNow).accepted }

    /// Offers a fix made by ``fix(_:north:east:accuracy:at:)``.
    @discardableResult
    func offer(
        _ provider: ProviderKind, north: Double = 0, east: Double = 0, accuracy: Double, at seconds: Double? = nil
    ) -> Bool {
        offer(fix(provider, north: north, east: east, accuracy: accuracy, at: seconds))
    }

    /// Moves both clocks forward.
    func advance(_ seconds: Double) { clock.advance(by: .microseconds(Int64((seconds * 1_000_000).rounded()))) }

    /// The current fix's provider, and how far north of the origin it is, to the metre.
    var current: (provider: ProviderKind, north: Double)? {
        selector.currentFix.map {
            ($0.provider, (($0.latitude - Fusion.origin.latitude) * Fusion.metresPerDegree).rounded())
        }
    }
}

/// One line of a recorded sequence: after `advance` seconds, `provider` reports a fix `north` metres up with
/// `accuracy`, measured `age` seconds before it arrives; `accepted` is what the rule must decide.
private struct Report: CustomStringConvertible {
    var advance: Double
    var provider: ProviderKind
    var north: Double
    var east: Double = 0
    var accuracy: Double
    var age: Double = 0
    var accepted: Bool

    var description: String {
        "+\(advance) s \(provider.rawValue) \(north) m N \(east) m E ±\(accuracy) m, \(age) s old"
    }
}

/// Plays `reports` through a fresh ``Fusion`` and checks each decision; returns the run for further checks.
@discardableResult
private func play(_ reports: [Report], sourceLocation: SourceLocation = #_sourceLocation) -> Fusion {
    let run = Fusion()
    var elapsed = 0.0
    for (index, report) in reports.enumerated() {
        run.advance(report.advance)
        elapsed += report.advance
        let decided = run.offer(
            report.provider, north: report.north, east: report.east, accuracy: report.accuracy,
            at: elapsed - report.age)
        #expect(decided == report.accepted, "report \(index): \(report)", sourceLocation: sourceLocation)
    }
    return run
}

// MARK: - The rule, step by step

@Suite("Fusion rule (FixSelector), step by step")
struct FixSelectorStepTests {
    @Test func theFirstUsableFixIsAccepted() {
        let run = Fusion()
        #expect(run.selector.currentFix == nil)
        #expect(run.offer(.static, north: 100, accuracy: 10_000))
        #expect(run.current?.provider == .static && run.current?.north == 100)
    }

    @Test func step1DropsNonFinitePositionsAndAccuracies() {
        let run = Fusion()
        let good = run.fix(.gpsd, accuracy: 25)
        let breakages: [(inout Fix) -> Void] = [
            { $0.latitude = .nan }, { $0.longitude = .infinity }, { $0.latitude = -.infinity },
            { $0.horizontalAccuracy = .nan }, { $0.horizontalAccuracy = .infinity },
        ]
        for breakage in breakages {
            var broken = good
            breakage(&broken)
            #expect(!run.offer(broken), "\(broken)")
            #expect(run.selector.currentFix == nil)
        }
        #expect(run.offer(good))
        #expect(run.selector.currentFix == good)
    }

    @Test func step1DroppedFixesLeaveNoTrace() {
        // A dropped fix with a later time does not count as the provider's latest: an earlier good fix still passes.
        let run = Fusion()
        var broken = run.fix(.gpsd, accuracy: 25, at: 10)
        broken.horizontalAccuracy = .nan
        #expect(!run.offer(broken))
        #expect(run.offer(.gpsd, accuracy: 25, at: 5))
        // Nor does it take the precise lock, though its position is precise.
        var lockless = run.fix(.gpsd, accuracy: 1, at: 6)
        lockless.longitude = .nan
        #expect(!run.offer(lockless))
        #expect(run.offer(.static, north: 0, accuracy: 10, at: 6))
    }

    @Test func step2DropsAFixOlderThanTheSameProvidersPrevious() {
        let run = Fusion()
        #expect(run.offer(.gpsd, north: 0, accuracy: 25, at: 10))
        #expect(!run.offer(.gpsd, north: 5, accuracy: 25, at: 9.999_999))
        #expect(run.current?.north == 0)
        // The same time again is not older.
        #expect(run.offer(.gpsd, north: 6, accuracy: 25, at: 10))
        #expect(run.offer(.gpsd, north: 7, accuracy: 25, at: 11))
        #expect(run.current?.north == 7)
    }

    @Test func step2OrdersEachProviderOnItsOwn() {
        // GeoClue compares across providers, so one provider's clock could starve another; here each provider is
        // ordered against itself, and another's older fix is judged only by the 1 s skew bound.
        let run = Fusion()
        #expect(run.offer(.wifi, north: 0, accuracy: 100, at: 100))
        #expect(run.offer(.gpsd, north: 0, accuracy: 50, at: 99.5))
        #expect(!run.offer(.gpsd, north: 0, accuracy: 50, at: 99.4), "older than gpsd's own previous fix")
        #expect(run.offer(.wifi, north: 0, accuracy: 40, at: 100.1))
    }

    @Test func step2DropsAnotherProvidersFixMoreThanOneSecondOlder() {
        let run = Fusion()
        #expect(run.offer(.gpsd, north: 0, accuracy: 25, at: 50))
        // Exactly the allowed skew passes (and, being more accurate, is not second-guessed by step 5)…
        #expect(run.offer(.wifi, north: 3, accuracy: 10, at: 49))
        #expect(run.current?.provider == .wifi)
        // …one microsecond more does not, however accurate the fix.
        #expect(!run.offer(.static, north: 0, accuracy: 1, at: 48 - 0.000_001))
        #expect(run.current?.provider == .wifi)
        // The bound is measured from the current fix (the network's, at 49), not the newest one seen (gpsd's, 50).
        #expect(run.offer(.static, north: 0, accuracy: 1, at: 48.5))
    }

    @Test func step2AStaleCurrentFixNoLongerDropsOlderFixesOfOthers() {
        let run = Fusion()
        #expect(run.offer(.gpsd, north: 0, accuracy: 25, at: 3_600))
        run.advance(59.999_999)
        #expect(!run.offer(.wifi, north: 0, accuracy: 10, at: 60), "an hour older than a fresh current fix")
        run.advance(0.000_001)
        #expect(run.offer(.wifi, north: 0, accuracy: 10, at: 60.5), "the current fix arrived 60 s ago")
    }

    @Test func step4APreciseSatelliteFixLocksOutOtherProvidersFor30Seconds() {
        let run = Fusion()
        #expect(run.offer(.gpsd, north: 0, accuracy: 19.9))
        run.advance(1)
        // Even a more accurate fix of another kind is locked out, satellite or not.
        for provider: ProviderKind in [.static, .wifi, .nmea, .replay] {
            #expect(!run.offer(provider, north: 0, accuracy: 1), "\(provider)")
        }
        // The locking provider itself goes on, precise or not.
        #expect(run.offer(.gpsd, north: 10, accuracy: 40))
        run.advance(28.999_999)
        #expect(!run.offer(.wifi, north: 10, accuracy: 1))
        // 30 s after the locking fix (the imprecise one did not extend it), the lock is over.
        run.advance(0.000_001)
        #expect(run.offer(.wifi, north: 10, accuracy: 1))
        #expect(run.current?.provider == .wifi)
    }

    @Test func step4EveryPreciseFixExtendsTheLock() {
        let run = Fusion()
        #expect(run.offer(.nmea, north: 0, accuracy: 5))
        run.advance(20)
        #expect(run.offer(.nmea, north: 0, accuracy: 5))
        run.advance(20)
        #expect(!run.offer(.static, north: 0, accuracy: 1), "40 s after the first fix, 20 s after the second")
        run.advance(10)
        #expect(run.offer(.static, north: 0, accuracy: 1))
    }

    @Test func step4OnlySatelliteFixesBetterThan20MetresLock() {
        // Exactly 20 m does not lock.
        let edge = Fusion()
        #expect(edge.offer(.gpsd, accuracy: 20))
        #expect(edge.offer(.wifi, accuracy: 5))
        // A precise static or network fix does not lock either.
        for provider: ProviderKind in [.static, .wifi] {
            let run = Fusion()
            #expect(run.offer(provider, accuracy: 1))
            #expect(run.offer(.gpsd, accuracy: 0.5), "\(provider) took a lock")
        }
        // Every satellite kind does.
        for provider: ProviderKind in [.gpsd, .nmea, .replay] {
            let run = Fusion()
            #expect(run.offer(provider, accuracy: 19))
            #expect(!run.offer(.wifi, accuracy: 1), "\(provider) did not lock")
        }
    }

    @Test func step4TheLockEndsAtOnceWhenTheLockingProviderIsLost() {
        let run = Fusion()
        #expect(run.offer(.gpsd, north: 0, accuracy: 5))
        run.advance(1)
        #expect(!run.offer(.static, north: 0, accuracy: 2))
        // Another provider going away changes nothing.
        run.selector.providerLost(.wifi)
        #expect(!run.offer(.static, north: 0, accuracy: 2))
        run.selector.providerLost(.gpsd)
        #expect(run.offer(.static, north: 0, accuracy: 2))
        #expect(run.current?.provider == .static)
    }

    @Test func step4ALostProvidersLastFixNoLongerBlocks() {
        // Losing the provider of the current fix forgets that fix too: a coarser fix inside its own circle around
        // it (step 5 would drop it) and one measured long before it (step 2 would) are taken at once.
        let run = Fusion()
        #expect(run.offer(.gpsd, north: 0, accuracy: 5, at: 100))
        run.advance(1)
        #expect(!run.offer(.wifi, north: 20, accuracy: 100, at: 101))
        run.selector.providerLost(.gpsd)
        #expect(run.selector.currentFix == nil)
        #expect(run.offer(.static, north: 20, accuracy: 1_000, at: 50))
        #expect(run.current?.provider == .static)
        // Losing another provider leaves the current fix alone.
        run.selector.providerLost(.gpsd)
        run.selector.providerLost(.wifi)
        #expect(run.current?.provider == .static)
    }

    @Test func step4ALostProviderStartsAfreshWhenItReturns() {
        // providerLost also forgets the provider's latest time, so a restarted receiver whose clock starts over
        // (or a gpsd that came back) is not held to its old times.
        let run = Fusion()
        #expect(run.offer(.gpsd, north: 0, accuracy: 5, at: 100))
        run.selector.providerLost(.gpsd)
        run.advance(2)
        #expect(run.offer(.gpsd, north: 1, accuracy: 5, at: 99.5))
        #expect(run.current?.north == 1)
    }

    @Test func step5RejectsALessAccurateFixInsideItsOwnCircle() {
        let run = Fusion()
        #expect(run.offer(.gpsd, north: 0, accuracy: 30))
        run.advance(2)
        #expect(!run.offer(.wifi, north: 80, accuracy: 100), "adds nothing: the current fix is inside its circle")
        #expect(run.offer(.wifi, north: 0, accuracy: 30), "as accurate is not less accurate")
        #expect(run.current?.provider == .wifi)
    }

    @Test func step5RejectsALessAccurateFixThatWouldNeedMoreThan500MetresPerSecond() {
        let run = Fusion()
        #expect(run.offer(.gpsd, north: 0, accuracy: 30, at: 0))
        run.advance(10)
        // 10 s later: 5.1 km away needs 510 m/s, 4.9 km 490 m/s.
        #expect(!run.offer(.nmea, north: 5_100, accuracy: 100, at: 10))
        #expect(run.current?.provider == .gpsd)
        #expect(run.offer(.nmea, north: 4_900, accuracy: 100, at: 10))
        #expect(run.current?.provider == .nmea && run.current?.north == 4_900)
    }

    @Test func step5SpeedIsMeasuredBetweenFixTimesNotArrivals() {
        let run = Fusion()
        #expect(run.offer(.gpsd, north: 0, accuracy: 30, at: 0))
        // It arrives 30 s later, but was measured 1 s after the current fix: 2 km in 1 s is not plausible.
        run.advance(30)
        #expect(!run.offer(.wifi, north: 2_000, accuracy: 100, at: 1))
        // A fix measured at the same time (or up to the 1 s skew earlier) outside its own circle can only be a jump.
        #expect(!run.offer(.static, north: 200, accuracy: 100, at: 0))
        #expect(run.current?.provider == .gpsd)
    }

    @Test func step5DoesNotSecondGuessAMoreAccurateFix() {
        let run = Fusion()
        #expect(run.offer(.wifi, north: 0, accuracy: 1_000))
        run.advance(1)
        // 50 km in a second, but more accurate: it wins.
        #expect(run.offer(.static, north: 50_000, accuracy: 10))
        #expect(run.current?.provider == .static && run.current?.north == 50_000)
    }

    @Test func step5DoesNotSecondGuessTheSameProvider() {
        // An edited static file or a replay that loops must move clients.
        let run = Fusion()
        #expect(run.offer(.static, north: 0, accuracy: 10))
        run.advance(1)
        #expect(run.offer(.static, north: 1_000_000, accuracy: 10_000), "the same provider's jump")
        #expect(run.current?.north == 1_000_000)
        #expect(run.offer(.static, north: 1_000_010, accuracy: 20_000), "inside its own circle")
        #expect(run.current?.north == 1_000_010)
    }

    @Test func step5AStaleCurrentFixNoLongerBlocksALessAccurateOne() {
        let run = Fusion()
        #expect(run.offer(.gpsd, north: 0, accuracy: 30))
        run.advance(59.999_999)
        #expect(!run.offer(.wifi, north: 10, accuracy: 100), "inside its circle while the current fix is fresh")
        // 60 s after the current fix arrived, it no longer blocks: neither the circle nor the speed test applies.
        run.advance(0.000_001)
        #expect(run.offer(.wifi, north: 10, accuracy: 100))
        #expect(run.current?.provider == .wifi)
    }

    @Test func step5StalenessCountsFromArrivalNotFromTheFixTime() {
        let run = Fusion()
        // Measured 3600 s before the start, arriving now: the fix is old but the selector has only just seen it.
        #expect(run.offer(.gpsd, north: 0, accuracy: 30, at: -3_600))
        run.advance(1)
        #expect(!run.offer(.wifi, north: 10, accuracy: 100))
        run.advance(59)
        #expect(run.offer(.wifi, north: 10, accuracy: 100))
    }

    @Test func step6AnAcceptedFixBecomesTheCurrentOne() {
        let run = Fusion()
        let first = run.fix(.wifi, north: 0, accuracy: 500)
        #expect(run.offer(first))
        #expect(run.selector.currentFix == first)
        run.advance(1)
        let second = run.fix(.gpsd, north: 100, accuracy: 25)
        #expect(run.offer(second))
        #expect(run.selector.currentFix == second)
        // A rejected fix leaves it as it was.
        #expect(!run.offer(.wifi, north: 150, accuracy: 500))
        #expect(run.selector.currentFix == second)
    }

    @Test func theDocumentedConstants() {
        #expect(FixSelector.lockAccuracy == 20)
        #expect(FixSelector.lockDuration == .seconds(30))
        #expect(FixSelector.maximumSpeed == 500)
        #expect(FixSelector.staleAfter == .seconds(60))
        #expect(FixSelector.crossProviderSkew == .seconds(1))
        #expect(ProviderKind.allCases.filter(\.isSatellite) == [.replay, .gpsd, .nmea, .modemGNSS])
    }
}

// MARK: - Recorded sequences

@Suite("Fusion rule (FixSelector), recorded sequences")
struct FixSelectorSequenceTests {
    @Test func aDriveWithNetworkFixesInterleaved() {
        // gpsd at 1 Hz driving north at 20 m/s with a 25 m figure (no lock), network fixes every few seconds.
        var reports: [Report] = []
        for second in 0..<10 {
            reports.append(
                Report(advance: 1, provider: .gpsd, north: Double(second) * 20, accuracy: 25, age: 0.3, accepted: true))
        }
        reports += [
            // Consistent with the car, but coarser: adds nothing.
            Report(advance: 0.2, provider: .wifi, north: 150, accuracy: 150, accepted: false),
            // A wrong Wi-Fi database entry 40 km away: 40 km in well under a second is a jump.
            Report(advance: 0.2, provider: .wifi, north: 40_000, accuracy: 150, accepted: false),
            Report(advance: 0.6, provider: .gpsd, north: 200, accuracy: 25, age: 0.3, accepted: true),
            // A network fix that is more accurate than gpsd's current one is taken…
            Report(advance: 0.1, provider: .wifi, north: 205, accuracy: 20, accepted: true),
            // …gpsd's next fix is coarser and inside its own circle around it: it adds nothing…
            Report(advance: 0.9, provider: .gpsd, north: 220, accuracy: 25, age: 0.3, accepted: false),
            // …but once the car has left that circle (at 35 m/s, plausible) gpsd takes over again.
            Report(advance: 1, provider: .gpsd, north: 240, accuracy: 25, age: 0.3, accepted: true),
        ]
        let run = play(reports)
        #expect(run.current?.provider == .gpsd && run.current?.north == 240)
    }

    @Test func jumpsFromAnotherProviderAreRejectedAndTheSameProvidersAccepted() {
        play([
            Report(advance: 0, provider: .nmea, north: 0, accuracy: 40, accepted: true),
            // 2 s later another provider puts us 2 km away (1000 m/s): implausible.
            Report(advance: 2, provider: .gpsd, north: 2_000, accuracy: 100, accepted: false),
            // The NMEA receiver itself jumps 2 km (a multipath glitch or a teleporting test track): its own
            // successive fixes are not second-guessed.
            Report(advance: 0, provider: .nmea, north: 2_000, accuracy: 40, accepted: true),
            // Now the other receiver agrees with the current one and is coarser: adds nothing.
            Report(advance: 0.5, provider: .gpsd, north: 2_000, accuracy: 100, accepted: false),
            // 20 s later, 9 km from the fix measured 20.5 s before is 439 m/s: plausible, and outside its circle.
            Report(advance: 20, provider: .gpsd, north: 11_000, accuracy: 100, accepted: true),
        ])
    }

    @Test func reorderedFixesAreDropped() {
        // Each report's age places its fix time; arrival order differs from measurement order.
        play([
            Report(advance: 1, provider: .gpsd, north: 0, accuracy: 30, age: 0, accepted: true),  // measured at 1
            Report(advance: 1, provider: .gpsd, north: 20, accuracy: 30, age: 0, accepted: true),  // at 2
            Report(advance: 0.1, provider: .gpsd, north: 10, accuracy: 30, age: 0.6, accepted: false),  // at 1.5: late
            Report(advance: 0.9, provider: .gpsd, north: 40, accuracy: 30, age: 0, accepted: true),  // at 3
            // Another provider's fix measured 1.5 s before the current one: dropped.
            Report(advance: 0, provider: .wifi, north: 30, accuracy: 5, age: 1.5, accepted: false),
            // Measured 0.5 s before: within the skew, and more accurate: taken.
            Report(advance: 0, provider: .wifi, north: 38, accuracy: 5, age: 0.5, accepted: true),
            // gpsd again, measured at 3 like its previous fix: not older, so step 2 lets it through, but it is
            // coarser than the network fix and inside its own circle around it, so step 5 drops it.
            Report(advance: 0.2, provider: .gpsd, north: 41, accuracy: 30, age: 0.2, accepted: false),
            // Measured at 4, 42 m from the network fix of 2.5: outside its circle, at 28 m/s.
            Report(advance: 0.8, provider: .gpsd, north: 80, accuracy: 30, age: 0, accepted: true),
        ])
    }

    @Test func aPreciseProviderLocksThenDisappears() {
        let run = play([
            Report(advance: 0, provider: .static, north: 0, accuracy: 1_000, accepted: true),
            // gpsd gets a precise fix: it replaces the static one and locks the others out.
            Report(advance: 1, provider: .gpsd, north: 300, accuracy: 8, accepted: true),
            Report(advance: 1, provider: .static, north: 0, accuracy: 1_000, accepted: false),
            Report(advance: 1, provider: .wifi, north: 5_000, accuracy: 50, accepted: false),
            Report(advance: 1, provider: .gpsd, north: 310, accuracy: 8, accepted: true),
        ])
        // The receiver is unplugged: the lock ends at once, 1 s after gpsd's last fix, not 30 s later, and its
        // last fix no longer blocks: a coarse fix that agrees with it is taken too.
        run.selector.providerLost(.gpsd)
        run.advance(1)
        #expect(run.offer(.wifi, north: 320, accuracy: 50), "a network fix 10 m from gpsd's last")
        #expect(run.current?.provider == .wifi)
        // …and gpsd, plugged in again, takes over with its first precise fix and locks again.
        run.advance(5)
        #expect(run.offer(.gpsd, north: 805, accuracy: 6))
        #expect(!run.offer(.wifi, north: 805, accuracy: 5))
    }

    @Test func aPreciseProviderThatGoesQuietStopsBlockingAfterItsLockAndStaleness() {
        // gpsd is not lost but stops reporting (the receiver lost its sky view).
        let run = play([
            Report(advance: 0, provider: .gpsd, north: 0, accuracy: 5, accepted: true),
            Report(advance: 29, provider: .static, north: 0, accuracy: 500, accepted: false),  // locked
            Report(advance: 1, provider: .static, north: 0, accuracy: 500, accepted: false),  // inside its circle
            Report(advance: 29.5, provider: .static, north: 0, accuracy: 500, accepted: false),
            Report(advance: 0.5, provider: .static, north: 0, accuracy: 500, accepted: true),  // 60 s: stale
        ])
        #expect(run.current?.provider == .static)
    }

    @Test func aReceiverClockAheadOfTheSystemClockPinsNothingOnceItsFixIsStaleOrLost() {
        // gpsd's fix carries the receiver's time, every other provider the system's. With the system clock an
        // hour behind the receiver (no RTC, no network yet: the reason many systems run gpsd at all), gpsd's
        // last fix is "newer" than anything another provider can produce, so step 2 drops them while it is
        // fresh; once it is stale, or gpsd is lost, they must get through.
        let quiet = play([
            Report(advance: 0, provider: .gpsd, north: 0, accuracy: 25, age: -3_600, accepted: true),
            Report(advance: 10, provider: .static, north: 5_000, accuracy: 50, accepted: false),
            Report(advance: 50, provider: .static, north: 5_000, accuracy: 50, accepted: true),
        ])
        #expect(quiet.current?.provider == .static)

        let lost = play([
            Report(advance: 0, provider: .gpsd, north: 0, accuracy: 5, age: -3_600, accepted: true),
            Report(advance: 10, provider: .static, north: 5_000, accuracy: 50, accepted: false),
        ])
        lost.selector.providerLost(.gpsd)
        #expect(lost.offer(.static, north: 5_000, accuracy: 50), "10 s, and gpsd lost")
    }
}
