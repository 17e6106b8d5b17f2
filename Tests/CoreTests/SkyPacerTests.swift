import Testing
import WhereaboutsCore

/// A sky of one GPS satellite seen at `strength` dB-Hz.
private func sky(_ strength: Double) -> [Satellite] {
    [Satellite(constellation: .gps, id: 5, elevation: 40, azimuth: 120, signalStrength: strength, usedInFix: true)]
}

@Suite("Satellites told at most once a second")
struct SkyPacerTests {
    @Test func aChangeAfterAQuietSecondIsPublishedAtOnce() {
        let clock = ManualClock()
        var pacer = SkyPacer()
        #expect(pacer.offer(sky(30), now: clock.monotonicNow) == .publish(sky(30)))
        clock.advance(by: .seconds(1))
        #expect(pacer.offer(sky(31), now: clock.monotonicNow) == .publish(sky(31)))
        #expect(pacer.published == sky(31))
    }

    @Test func theSameSkyIsNeverPublishedTwice() {
        let clock = ManualClock()
        var pacer = SkyPacer()
        #expect(pacer.offer([], now: clock.monotonicNow) == .nothing, "the empty sky is the one published first")
        #expect(pacer.offer(sky(30), now: clock.monotonicNow) == .publish(sky(30)))
        clock.advance(by: .seconds(5))
        #expect(pacer.offer(sky(30), now: clock.monotonicNow) == .nothing)
    }

    @Test func changesWithinASecondWaitAndOnlyTheNewestIsPublished() {
        let clock = ManualClock()
        var pacer = SkyPacer()
        let start = clock.monotonicNow
        #expect(pacer.offer(sky(30), now: start) == .publish(sky(30)))
        clock.advance(by: .milliseconds(200))
        #expect(pacer.offer(sky(31), now: clock.monotonicNow) == .wait(until: start + .seconds(1)))
        clock.advance(by: .milliseconds(200))
        #expect(pacer.offer(sky(32), now: clock.monotonicNow) == .nothing, "a wait is already asked for")
        #expect(pacer.published == sky(30))
        clock.advance(by: .milliseconds(600))
        #expect(pacer.due(now: clock.monotonicNow) == sky(32))
        #expect(pacer.due(now: clock.monotonicNow) == nil, "nothing is published twice")
        clock.advance(by: .milliseconds(999))
        #expect(pacer.offer(sky(33), now: clock.monotonicNow) == .wait(until: start + .seconds(2)))
    }

    @Test func aChangeUndoneWhileWaitingIsNotPublished() {
        let clock = ManualClock()
        var pacer = SkyPacer()
        _ = pacer.offer(sky(30), now: clock.monotonicNow)
        clock.advance(by: .milliseconds(100))
        _ = pacer.offer(sky(31), now: clock.monotonicNow)
        _ = pacer.offer(sky(30), now: clock.monotonicNow)
        clock.advance(by: .milliseconds(900))
        #expect(pacer.due(now: clock.monotonicNow) == nil)
        #expect(pacer.published == sky(30))
    }

    @Test func anHourOfTenSkiesASecondPublishesAtMostOneASecond() {
        let clock = ManualClock()
        var pacer = SkyPacer()
        var publications: [MonotonicTime] = []
        var dueAt: MonotonicTime?
        for step in 0..<36_000 {
            if let due = dueAt, due <= clock.monotonicNow {
                dueAt = nil
                if pacer.due(now: clock.monotonicNow) != nil { publications.append(clock.monotonicNow) }
            }
            switch pacer.offer(sky(Double(step % 50)), now: clock.monotonicNow) {
            case .publish: publications.append(clock.monotonicNow)
            case .wait(let until): dueAt = until
            case .nothing: break
            }
            clock.advance(by: .milliseconds(100))
        }
        let gaps = zip(publications, publications.dropFirst()).map { $1 - $0 }
        #expect(gaps.allSatisfy { $0 >= .seconds(1) })
        #expect(publications.count >= 3590, "every second has its publication")
    }
}

@Suite("What a client sees of the receiver's fix")
struct PresentedFixTests {
    static let fix = Fix(
        latitude: 48.1, longitude: 11.5, horizontalAccuracy: 4, altitude: 520, fixType: .rtkFixed, hdop: 0.7,
        vdop: 1.1, pdop: 1.3, timestamp: WallTime(microseconds: 1_700_000_000_000_000), provider: .gpsd,
        description: "gpsd 3D fix")

    @Test func anExactClientSeesTheFixTypeAndDOPs() {
        #expect(present(Self.fix, servedAt: .exact, shownAt: .exact) == Self.fix)
    }

    @Test func aClientServedBelowExactSeesNoneOfThem() {
        let seen = present(Self.fix, servedAt: .city, shownAt: .exact)
        #expect(seen.fixType == .none && seen.hdop == nil && seen.vdop == nil && seen.pdop == nil)
        #expect(seen.latitude == Self.fix.latitude, "the position is the fix's, as GeoClue serves it")
        let coarse = present(Self.fix, servedAt: .exact, shownAt: .city)
        #expect(coarse.fixType == .none && coarse.hdop == nil, "a coarsened fix keeps nothing of the receiver")
    }
}
