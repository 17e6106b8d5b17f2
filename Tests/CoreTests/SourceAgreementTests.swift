import Testing
import WhereaboutsCore

/// Step 3 of the fusion rule: network answers a better-placed source contradicts are not served.
@Suite("Fusion rule (FixSelector), step 3: sources that disagree")
struct SourceAgreementTests {
    /// Offers a fix made by the run and returns the whole decision.
    private func decide(
        _ run: Fusion, _ provider: ProviderKind, north: Double, accuracy: Double, standing: [Fix] = []
    ) -> FusionDecision {
        run.selector.offer(
            run.fix(provider, north: north, accuracy: accuracy), now: run.clock.monotonicNow, standing: standing)
    }

    @Test func aWiFiAnswerFortyKilometresFromTheCellsAnswerIsNotServedAndReportedOnce() {
        let run = Fusion()
        #expect(run.offer(.cell, north: 0, accuracy: 2_000))
        run.advance(1)
        let first = decide(run, .wifi, north: 40_000, accuracy: 30)
        #expect(!first.accepted)
        #expect(first.disagreement?.disputed.provider == .wifi)
        #expect(first.disagreement?.reference.provider == .cell)
        #expect(first.disagreement?.isNew == true)
        #expect((first.disagreement?.distance ?? 0) > 39_900)
        #expect(abs((first.disagreement?.allowed ?? 0) - (30 + 2_000 + 70)) < 0.001)
        #expect(run.current?.provider == .cell)
        run.advance(10)
        let again = decide(run, .wifi, north: 40_000, accuracy: 30)
        #expect(!again.accepted)
        #expect(again.disagreement?.isNew == false, "reported once")
    }

    @Test func theCellsStandingAnswerIsAReferenceHoweverOldItsFix() {
        let run = Fusion()
        let cells = run.fix(.cell, north: 0, accuracy: 2_000)
        run.advance(3_600)
        let decision = decide(run, .wifi, north: 40_000, accuracy: 30, standing: [cells])
        #expect(!decision.accepted)
        #expect(decision.disagreement?.allowed == 2_030, "no travel from a standing fix")
        #expect(decide(run, .wifi, north: 1_500, accuracy: 30, standing: [cells]).accepted)
    }

    @Test func anAnswerWithinBothAccuraciesAndTravelIsServed() {
        let run = Fusion()
        #expect(run.offer(.cell, north: 0, accuracy: 2_000))
        run.advance(1)
        let decision = decide(run, .wifi, north: 2_050, accuracy: 30)
        #expect(decision.accepted && decision.disagreement == nil)
    }

    @Test func aSatelliteFixIsAReferenceForFiveMinutesWithTravel() {
        let run = Fusion()
        #expect(run.offer(.gpsd, north: 0, accuracy: 25))
        run.advance(20)
        // 3 km off 20 s after a satellite fix: 20 + 25 + 1400 m allowed.
        #expect(decide(run, .wifi, north: 3_000, accuracy: 20).disagreement?.reference.provider == .gpsd)
        run.advance(40)
        // A minute after it, 4.2 km of travel is plausible.
        #expect(decide(run, .wifi, north: 3_000, accuracy: 20).accepted)
        let late = Fusion()
        #expect(late.offer(.gpsd, north: 0, accuracy: 25))
        late.advance(300)
        #expect(decide(late, .wifi, north: 30_000, accuracy: 20).disagreement == nil, "past the window")
    }

    @Test func aBetterPlacedFixDisputesTheCurrentOneAndReplacesIt() {
        let run = Fusion()
        let wrong = run.fix(.wifi, north: 40_000, accuracy: 30)
        #expect(run.offer(wrong))
        run.advance(1)
        // Step 5 alone would reject the cells' answer: 40 km in a second.
        let decision = decide(run, .cell, north: 0, accuracy: 2_000)
        #expect(decision.accepted)
        #expect(decision.disagreement?.disputed == wrong)
        #expect(decision.disagreement?.isNew == true)
        #expect(run.current?.provider == .cell)
        run.advance(10)
        #expect(decide(run, .wifi, north: 40_000, accuracy: 30).disagreement?.isNew == false)
    }

    @Test func eachRankChecksTheRanksBelowIt() {
        let run = Fusion()
        #expect(run.offer(.wifi, north: 0, accuracy: 30))
        run.advance(1)
        // An IP answer 100 km from a Wi-Fi answer, at ± 25 km.
        #expect(decide(run, .ip, north: 100_000, accuracy: 25_000).disagreement?.reference.provider == .wifi)
        // Satellites and the static position are never disputed.
        let satellites = Fusion()
        #expect(satellites.offer(.cell, north: 0, accuracy: 2_000))
        satellites.advance(1)
        let gpsd = decide(satellites, .gpsd, north: 40_000, accuracy: 10)
        #expect(gpsd.accepted)
        #expect(gpsd.disagreement?.disputed.provider == .cell, "the cells' answer it contradicts is the disputed one")
        #expect(decide(satellites, .static, north: 80_000, accuracy: 10).disagreement == nil)
    }

    @Test func beingServedAgainEndsTheReportAndLosingTheReferenceEndsTheDispute() {
        let run = Fusion()
        #expect(run.offer(.cell, north: 0, accuracy: 2_000))
        #expect(decide(run, .wifi, north: 40_000, accuracy: 30).disagreement?.isNew == true)
        run.advance(1)
        #expect(decide(run, .wifi, north: 100, accuracy: 30).accepted)
        run.advance(1)
        #expect(decide(run, .wifi, north: 40_000, accuracy: 30).disagreement?.isNew == true, "a new episode")
        run.selector.providerLost(.cell)
        run.advance(1)
        #expect(decide(run, .wifi, north: 40_000, accuracy: 30).disagreement == nil)
    }

    @Test func aDisputedFixIsNoOnesReference() {
        let run = Fusion()
        #expect(run.offer(.wifi, north: 40_000, accuracy: 30))
        run.advance(1)
        #expect(decide(run, .cell, north: 0, accuracy: 2_000).disagreement?.disputed.provider == .wifi)
        run.advance(1)
        // Near the cells, 40 km from the disputed Wi-Fi answer: nothing contradicts it.
        #expect(decide(run, .ip, north: 0, accuracy: 25_000).disagreement == nil)
    }

    @Test func theDocumentedConstantsAndRanks() {
        #expect(SourceAgreement.referenceWindow == .seconds(300))
        #expect(SourceAgreement.plausibleSpeed == 70)
        #expect(ProviderKind.allCases.filter { $0.placementRank == 3 } == [.static, .replay, .gpsd, .nmea, .modemGNSS])
        #expect(ProviderKind.allCases.filter { $0.placementRank == 2 } == [.cell, .cdma])
        #expect(ProviderKind.wifi.placementRank == 1 && ProviderKind.ip.placementRank == 0)
        #expect(ProviderKind.compass.placementRank == nil)
    }
}
