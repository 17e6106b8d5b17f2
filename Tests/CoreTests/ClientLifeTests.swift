import Testing
import WhereaboutsCore

/// The admission's own failure, in these tests.
private struct Denied: Error, Equatable {}

private typealias Life = ClientLife<Denied>
private typealias Effect = ClientEffect<Denied>

/// 2023-11-14T22:13:20Z.
private let epoch = WallTime(microseconds: 1_700_000_000_000_000)

/// A fix at `latitude`, 10°E, measured `seconds` after ``epoch``, from `provider`.
private func fix(_ latitude: Double = 51, at seconds: Int64 = 0, provider: ProviderKind = .gpsd, accuracy: Double = 5)
    -> Fix
{
    Fix(
        latitude: latitude, longitude: 10, horizontalAccuracy: accuracy,
        timestamp: WallTime(microseconds: epoch.microseconds + seconds * 1_000_000), provider: provider,
        description: "test")
}

/// A client's life with its timers kept on a manual clock: effects that arm and disarm timers are carried out,
/// and ``advance(by:)`` fires the due ones in deadline order.
private struct Rig {
    let clock = ManualClock(wall: epoch)
    var life: Life
    private(set) var deadlines: [ClientTimer: MonotonicTime] = [:]

    init(available: Bool = true) {
        life = Life(available: available, clock: clock)
    }

    /// Hands `event` to the life, returning its effects.
    @discardableResult
    mutating func take(_ event: ClientEvent<Denied>) -> [Effect] {
        // A timer that fires is no longer armed.
        if case .timerFired(let timer) = event { deadlines[timer] = nil }
        let effects = life.handle(event)
        for effect in effects {
            switch effect {
            case .arm(let timer, let delay):
                #expect(deadlines[timer] == nil, "\(timer) armed twice")
                deadlines[timer] = clock.monotonicNow + delay
            case .disarm(let timer):
                #expect(deadlines.removeValue(forKey: timer) != nil, "\(timer) disarmed but not armed")
            default: break
            }
        }
        return effects
    }

    /// Moves the clock on by `duration`, firing every timer due by then; returns what they did.
    mutating func advance(by duration: Duration) -> [Effect] {
        let end = clock.monotonicNow + duration
        var effects: [Effect] = []
        while let (timer, deadline) = deadlines.min(by: { $0.value < $1.value }), deadline <= end {
            clock.advance(by: deadline - clock.monotonicNow)
            effects += take(.timerFired(timer))
        }
        clock.advance(by: end - clock.monotonicNow)
        return effects
    }

    /// Starts the client through a passed admission at `level`.
    mutating func started(at level: AccuracyLevel = .exact, shown: AccuracyLevel = .exact) {
        take(.start)
        take(.admitted(.start, level: level, shown: shown, latest: nil))
    }
}

/// The messages among `effects`, without timer bookkeeping.
private func messages(_ effects: [Effect]) -> [Effect] {
    effects.filter {
        switch $0 {
        case .arm, .disarm: false
        default: true
        }
    }
}

// MARK: - Start and stop

@Test func startRunsTheAdmissionAndAPassStartsTheClient() {
    var rig = Rig()
    #expect(rig.take(.start) == [.admit(.start)])
    #expect(rig.life.starting == .start)
    #expect(
        rig.take(.admitted(.start, level: .street, latest: nil)) == [
            .activeChanged(true), .answerStart(nil), .activityChanged,
        ])
    #expect(rig.life.active && rig.life.servedLevel == .street && rig.life.starting == nil)
}

@Test func startWhileStartedAnswersAtOnceAndWhileStartingRefuses() {
    var rig = Rig()
    rig.take(.start)
    #expect(rig.take(.start) == [.answerStart(.startInProgress)])
    rig.take(.admitted(.start, level: .exact, latest: nil))
    #expect(rig.take(.start) == [.answerStart(nil)])
}

@Test func aRefusedAdmissionFailsStartWithItsOwnError() {
    var rig = Rig()
    rig.take(.start)
    #expect(rig.take(.notAdmitted(.start, Denied())) == [.answerStart(.admission(Denied()))])
    #expect(!rig.life.active && rig.life.starting == nil)
    #expect(rig.take(.start) == [.admit(.start)])
}

@Test func stopDuringTheAdmissionWinsAndStartAnswersWithoutStarting() {
    var rig = Rig()
    rig.take(.start)
    #expect(rig.take(.stop).isEmpty)
    #expect(rig.take(.admitted(.start, level: .exact, latest: nil)) == [.answerStart(nil)])
    #expect(!rig.life.active)
}

@Test func stopEndsTheStartAndKeepsTheLocation() {
    var rig = Rig()
    rig.started()
    rig.take(.fix(fix()))
    #expect(rig.take(.stop) == [.activeChanged(false), .activityChanged])
    #expect(rig.take(.stop).isEmpty)
    #expect(rig.take(.fix(fix(52, at: 10))).isEmpty)
}

// MARK: - Holds arriving during an admission

@Test func aSessionHoldArrivingDuringTheAdmissionRefusesIt() {
    var rig = Rig()
    rig.take(.start)
    rig.take(.hold(.sessionInactive, reason: "session-inactive"))
    #expect(
        rig.take(.admitted(.start, level: .exact, latest: nil)) == [.answerStart(.refused(.sessionInactive))])
    #expect(!rig.life.active)
}

@Test func anAgentHoldArrivingDuringTheAdmissionRefusesIt() {
    var rig = Rig()
    rig.take(.requestLocation(RequestID(1), timeout: .seconds(30), maximumAge: nil, highAccuracy: nil))
    rig.take(.permittedLevelChanged(.none, latest: nil, available: true))
    #expect(
        rig.take(.admitted(.request(RequestID(1)), level: .exact, latest: nil)) == [
            .failRequests([RequestID(1)], .refused(.disabledByAgent))
        ])
}

@Test func holdsTheAdmissionPassedAreOver() {
    var rig = Rig()
    rig.take(.hold(.sessionInactive, reason: "session-inactive"))
    rig.take(.start)
    rig.take(.admitted(.start, level: .exact, latest: nil))
    #expect(rig.life.active && rig.life.holds.isEmpty)
}

// MARK: - The update filter

@Test func theFirstFixIsSignalledAsTheProvidersGaveIt() {
    // The level an app asks chooses its providers; nothing the user chose limits it, so its fixes are not coarsened.
    var rig = Rig()
    rig.started(at: .city)
    let effects = rig.take(.fix(fix()))
    #expect(effects == [.signal(fix())])
    #expect(rig.life.hasFixSinceStart)
}

@Test func aClientTheUserLimitedGetsItsFixesOnTheLimitsGrid() {
    var rig = Rig()
    rig.started(at: .city, shown: .city)
    #expect(rig.take(.fix(fix())) == [.signal(coarsen(fix(), to: .city))])
    #expect(rig.life.shownLevel == .city)
}

@Test func anotherReportOfTheSignalledMeasurementIsRefreshedInPlaceOnce() {
    var rig = Rig()
    rig.started()
    rig.take(.fix(fix(accuracy: 20)))
    #expect(rig.take(.fix(fix(accuracy: 5))) == [.refresh(fix(accuracy: 5))])
    #expect(rig.take(.fix(fix(accuracy: 5))).isEmpty)
}

@Test func belowTheMinimumUpdateDistanceNothingHappens() {
    var rig = Rig()
    rig.take(.set(.minimumUpdateDistance(1000)))
    rig.started()
    rig.take(.fix(fix(51)))
    #expect(rig.take(.fix(fix(51.001, at: 5))).isEmpty)
    #expect(rig.take(.fix(fix(51.1, at: 10))) == [.signal(fix(51.1, at: 10))])
}

@Test func belowGeoCluesThresholdsTheCurrentLocationIsRefreshed() {
    var rig = Rig()
    rig.take(.set(.timeThreshold(60)))
    rig.started()
    rig.take(.fix(fix(51)))
    #expect(rig.take(.fix(fix(51.2, at: 30))) == [.refresh(fix(51.2, at: 30))])
    #expect(rig.take(.fix(fix(51.3, at: 61))) == [.signal(fix(51.3, at: 61))])
}

@Test func aNewStartSignalsTheSameMeasurementAgain() {
    var rig = Rig()
    rig.started()
    rig.take(.fix(fix()))
    rig.take(.stop)
    rig.started()
    #expect(rig.take(.fix(fix())) == [.signal(fix())])
}

// MARK: - Monitoring

@Test func monitoringSignalsUpdatesTimedOutWhenNoUpdateCameAndAgainAfter() {
    var rig = Rig()
    rig.take(.set(.monitoringTimeout(1000)))
    rig.started()
    #expect(rig.life.armed == [.monitoring])
    #expect(messages(rig.advance(by: .milliseconds(999))).isEmpty)
    #expect(messages(rig.advance(by: .milliseconds(1))) == [.updatesTimedOut])
    #expect(messages(rig.advance(by: .milliseconds(1000))) == [.updatesTimedOut])
}

@Test func aSignalledFixPutsTheMonitoringDeadlineBack() {
    var rig = Rig()
    rig.take(.set(.monitoringTimeout(1000)))
    rig.started()
    _ = rig.advance(by: .milliseconds(600))
    rig.take(.fix(fix()))
    #expect(messages(rig.advance(by: .milliseconds(900))).isEmpty)
    #expect(messages(rig.advance(by: .milliseconds(100))) == [.updatesTimedOut])
}

@Test func monitoringEndsWithTheStartAndWithATimeoutOfZero() {
    var rig = Rig()
    rig.take(.set(.monitoringTimeout(1000)))
    rig.started()
    rig.take(.stop)
    #expect(rig.life.armed.isEmpty)
    rig.started()
    rig.take(.set(.monitoringTimeout(0)))
    #expect(rig.life.armed.isEmpty)
    #expect(messages(rig.advance(by: .seconds(5))).isEmpty)
}

// MARK: - Single requests

@Test func aRequestWaitsForTheNextFixAtItsAdmittedLevel() {
    var rig = Rig()
    let request = RequestID(1)
    #expect(
        rig.take(.requestLocation(request, timeout: .seconds(30), maximumAge: nil, highAccuracy: nil)) == [
            .admit(.request(request))
        ])
    #expect(
        messages(rig.take(.admitted(.request(request), level: .city, shown: .street, latest: nil))) == [
            .activityChanged
        ])
    #expect(rig.life.isServing && rig.life.servedLevel == .city)
    #expect(
        messages(rig.take(.fix(fix()))) == [.answerRequests([request], coarsen(fix(), to: .street)), .activityChanged])
    #expect(!rig.life.isServing && rig.life.armed.isEmpty)
}

@Test func aRequestTimesOut() {
    var rig = Rig()
    let request = RequestID(1)
    rig.take(.requestLocation(request, timeout: .seconds(2), maximumAge: nil, highAccuracy: nil))
    rig.take(.admitted(.request(request), level: .exact, latest: nil))
    #expect(messages(rig.advance(by: .seconds(2))) == [.failRequests([request], .timedOut), .activityChanged])
    #expect(!rig.life.isServing)
}

@Test func aRecentEnoughFixAnswersARequestAtOnce() {
    var rig = Rig()
    let request = RequestID(1)
    rig.clock.advance(by: .seconds(10))
    rig.take(.requestLocation(request, timeout: .seconds(30), maximumAge: .seconds(10), highAccuracy: nil))
    #expect(
        rig.take(.admitted(.request(request), level: .exact, latest: fix())) == [.answerRequests([request], fix())])
    #expect(!rig.life.isServing)
    let old = RequestID(2)
    rig.clock.advance(by: .seconds(1))
    rig.take(.requestLocation(old, timeout: .seconds(30), maximumAge: .seconds(10), highAccuracy: nil))
    #expect(messages(rig.take(.admitted(.request(old), level: .exact, latest: fix()))) == [.activityChanged])
}

@Test func aRequestOfAStartedClientIsCountedNotStarted() {
    var rig = Rig()
    rig.started(at: .street)
    rig.take(.requestLocation(RequestID(1), timeout: .seconds(30), maximumAge: nil, highAccuracy: false))
    #expect(
        messages(rig.take(.admitted(.request(RequestID(1)), level: .exact, latest: nil))) == [.recount])
    #expect(rig.life.servedLevel == .street && rig.life.demandedLevel == .street && !rig.life.highAccuracy)
}

@Test func theHighAccuracyOptionRecountsAServingClient() {
    var rig = Rig()
    rig.started()
    #expect(
        rig.take(.requestLocation(RequestID(1), timeout: .seconds(30), maximumAge: nil, highAccuracy: false)) == [
            .recount, .admit(.request(RequestID(1))),
        ])
    #expect(rig.life.demandedLevel == Life.powerSavingLevel)
}

// MARK: - Holds

@Test func aHoldStopsAStartedClientWhichResumesThroughANewAdmission() {
    var rig = Rig()
    rig.started()
    rig.take(.requestLocation(RequestID(1), timeout: .seconds(30), maximumAge: nil, highAccuracy: nil))
    rig.take(.admitted(.request(RequestID(1)), level: .exact, latest: nil))
    #expect(
        messages(rig.take(.hold(.servicesDisabled, reason: "services-disabled"))) == [
            .failRequests([RequestID(1)], .held(.servicesDisabled)), .activeChanged(false), .activityChanged,
            .availableChanged(false), .availabilitySignalled(false, reason: "services-disabled"),
        ])
    #expect(rig.life.resumesLater && !rig.life.available)
    #expect(
        rig.take(.release(.servicesDisabled, reason: "services-enabled", available: true)) == [
            .availableChanged(true), .availabilitySignalled(true, reason: "services-enabled"), .admit(.resume),
        ])
    #expect(
        rig.take(.admitted(.resume, level: .exact, latest: nil)) == [.activeChanged(true), .activityChanged])
    #expect(!rig.life.resumesLater)
}

@Test func aClientResumesOnlyWhenEveryHoldHasEnded() {
    var rig = Rig()
    rig.started()
    rig.take(.hold(.servicesDisabled, reason: "services-disabled"))
    rig.take(.hold(.sessionInactive, reason: "session-inactive"))
    #expect(rig.take(.release(.servicesDisabled, reason: "services-enabled", available: true)).isEmpty)
    #expect(rig.take(.release(.sessionInactive, reason: "session-active", available: true)).contains(.admit(.resume)))
}

@Test func aStopWhileHeldMeansNoResumption() {
    var rig = Rig()
    rig.started()
    rig.take(.hold(.sessionInactive, reason: "session-inactive"))
    rig.take(.stop)
    #expect(!rig.take(.release(.sessionInactive, reason: "session-active", available: true)).contains(.admit(.resume)))
}

@Test func aHoldReturningDuringTheResumptionKeepsTheClientStopped() {
    var rig = Rig()
    rig.started()
    rig.take(.hold(.servicesDisabled, reason: "services-disabled"))
    rig.take(.release(.servicesDisabled, reason: "services-enabled", available: true))
    rig.take(.hold(.servicesDisabled, reason: "services-disabled"))
    #expect(rig.take(.admitted(.resume, level: .exact, latest: nil)).isEmpty)
    #expect(!rig.life.active && rig.life.resumesLater)
}

@Test func aRefusedResumptionStaysStopped() {
    var rig = Rig()
    rig.started()
    rig.take(.hold(.servicesDisabled, reason: "services-disabled"))
    rig.take(.release(.servicesDisabled, reason: "services-enabled", available: true))
    #expect(rig.take(.notAdmitted(.resume, Denied())) == [.staysStopped(.admission(Denied()))])
    #expect(!rig.life.resumesLater && rig.life.starting == nil)
}

@Test func aStartDuringTheResumptionRefuses() {
    var rig = Rig()
    rig.started()
    rig.take(.hold(.servicesDisabled, reason: "services-disabled"))
    rig.take(.release(.servicesDisabled, reason: "services-enabled", available: true))
    #expect(rig.take(.start) == [.answerStart(.startInProgress)])
}

@Test func thePermittedLevelServesAStartedClientAtOnce() {
    var rig = Rig()
    rig.started(at: .exact)
    rig.take(.fix(fix()))
    #expect(
        rig.take(.permittedLevelChanged(.city, shown: .city, latest: fix(), available: true)) == [
            .servedLevelChanged(.city), .activityChanged, .signal(coarsen(fix(), to: .city)),
        ])
    #expect(rig.take(.permittedLevelChanged(.city, shown: .city, latest: fix(), available: true)).isEmpty)
    // The cap lifted to what the app asked: shown as the providers gave it again, at the same level.
    #expect(rig.take(.permittedLevelChanged(.city, latest: fix(), available: true)) == [.signal(fix())])
}

@Test func aPermittedLevelOfNoneHoldsUntilItRises() {
    var rig = Rig()
    rig.started()
    #expect(
        rig.take(.permittedLevelChanged(.none, latest: nil, available: true)) == [
            .activeChanged(false), .activityChanged, .availableChanged(false),
            .availabilitySignalled(false, reason: "agent-disabled"),
        ])
    #expect(
        rig.take(.permittedLevelChanged(.street, latest: nil, available: true)) == [
            .availableChanged(true), .availabilitySignalled(true, reason: "agent-enabled"), .admit(.resume),
        ])
}

@Test func aRevokedClientStopsForGood() {
    var rig = Rig()
    rig.started()
    #expect(
        rig.take(.revoked) == [
            .activeChanged(false), .activityChanged, .availabilitySignalled(false, reason: "authorisation-changed"),
        ])
    #expect(!rig.life.resumesLater)
}

@Test func providersGoingAwayFailWaitingRequestsAndLeaveAStartedClientStarted() {
    var rig = Rig()
    rig.started()
    rig.take(.requestLocation(RequestID(1), timeout: .seconds(30), maximumAge: nil, highAccuracy: nil))
    rig.take(.admitted(.request(RequestID(1)), level: .exact, latest: nil))
    #expect(
        messages(rig.take(.providersAvailability(false, reason: "provider-lost"))) == [
            .availableChanged(false), .availabilitySignalled(false, reason: "provider-lost"),
            .failRequests([RequestID(1)], .unavailable),
        ])
    #expect(rig.life.active)
}

@Test func availabilityIsFalseWhileHeldWhateverTheProvidersSay() {
    var rig = Rig()
    rig.take(.hold(.servicesDisabled, reason: "services-disabled"))
    #expect(rig.take(.providersAvailability(true, reason: "provider-available")).isEmpty)
    #expect(!rig.life.available)
}

// MARK: - Deletion

@Test func deletionFailsWaitingRequestsAndAnswersAdmissionsStillRunning() {
    var rig = Rig()
    rig.take(.set(.monitoringTimeout(1000)))
    rig.started()
    rig.take(.requestLocation(RequestID(1), timeout: .seconds(30), maximumAge: nil, highAccuracy: nil))
    rig.take(.admitted(.request(RequestID(1)), level: .exact, latest: nil))
    rig.take(.requestLocation(RequestID(2), timeout: .seconds(30), maximumAge: nil, highAccuracy: nil))
    rig.take(.stop)
    rig.take(.start)
    #expect(messages(rig.take(.deleted)) == [.failRequests([RequestID(1)], .deleted)])
    #expect(rig.life.armed.isEmpty && !rig.life.active)
    #expect(
        rig.take(.admitted(.request(RequestID(2)), level: .exact, latest: nil)) == [
            .failRequests([RequestID(2)], .deleted)
        ])
    #expect(rig.take(.notAdmitted(.start, Denied())) == [.answerStart(.admission(Denied()))])
    #expect(rig.take(.fix(fix())).isEmpty)
    #expect(rig.take(.start).isEmpty)
}

// MARK: - Every event in every state

/// The states a client can be in, each reached by a sequence of events.
private let states: [(name: String, events: [ClientEvent<Denied>])] = [
    ("new", []),
    ("starting", [.start]),
    ("started", [.set(.monitoringTimeout(500)), .start, .admitted(.start, level: .exact, latest: nil)]),
    (
        "started with a fix",
        [.start, .admitted(.start, level: .exact, latest: nil), .fix(fix())]
    ),
    (
        "started, a request waiting",
        [
            .start, .admitted(.start, level: .exact, latest: nil),
            .requestLocation(RequestID(1), timeout: .seconds(1), maximumAge: nil, highAccuracy: nil),
            .admitted(.request(RequestID(1)), level: .exact, latest: nil),
        ]
    ),
    (
        "a request waiting for its admission",
        [.requestLocation(RequestID(1), timeout: .seconds(1), maximumAge: nil, highAccuracy: nil)]
    ),
    (
        "a request waiting for a fix",
        [
            .requestLocation(RequestID(1), timeout: .seconds(1), maximumAge: nil, highAccuracy: nil),
            .admitted(.request(RequestID(1)), level: .city, latest: nil),
        ]
    ),
    ("held, to resume", [.start, .admitted(.start, level: .exact, latest: nil), .hold(.sessionInactive, reason: "")]),
    ("held, stopped", [.hold(.servicesDisabled, reason: "")]),
    (
        "resuming",
        [
            .start, .admitted(.start, level: .exact, latest: nil), .hold(.servicesDisabled, reason: ""),
            .release(.servicesDisabled, reason: "", available: true),
        ]
    ),
    ("providers gone", [.providersAvailability(false, reason: "")]),
    ("deleted", [.start, .deleted]),
]

/// Every kind of event, with its arguments.
private let events: [ClientEvent<Denied>] =
    [
        .start, .stop,
        .requestLocation(RequestID(9), timeout: .seconds(1), maximumAge: .seconds(5), highAccuracy: false),
        .admitted(.start, level: .street, latest: fix()), .admitted(.resume, level: .city, latest: nil),
        .admitted(.request(RequestID(1)), level: .exact, latest: fix()), .notAdmitted(.start, Denied()),
        .notAdmitted(.resume, Denied()), .notAdmitted(.request(RequestID(1)), Denied()), .fix(fix(52, at: 3)),
        .permittedLevelChanged(.none, latest: nil, available: true),
        .permittedLevelChanged(.city, latest: fix(), available: true), .revoked,
        .providersAvailability(false, reason: "gone"), .providersAvailability(true, reason: "back"),
        .timerFired(.monitoring), .timerFired(.request(RequestID(1))), .deleted,
    ]
    + ClientHold.allCases.flatMap { [.hold($0, reason: "held"), .release($0, reason: "released", available: true)] }
    + [
        .set(.distanceThreshold(5)), .set(.timeThreshold(5)), .set(.requestedLevel(8)), .set(.highAccuracy(false)),
        .set(.minimumUpdateDistance(3)), .set(.monitoringTimeout(100)),
    ]

/// True for an effect that answers a call.
private func answersACall(_ effect: Effect) -> Bool {
    switch effect {
    case .answerStart, .answerRequests, .failRequests: true
    default: false
    }
}

/// What holds after every event, whatever the state.
private func checkInvariants(_ rig: Rig, after event: String) {
    let life = rig.life
    #expect(
        life.armed.contains(.monitoring) == (life.active && life.monitoringTimeout > 0),
        "monitoring timer out of step \(event)")
    #expect(
        Set(life.armed.filter { $0 != .monitoring }) == Set(life.waitingRequests.map { ClientTimer.request($0) }),
        "request timers out of step \(event)")
    #expect(Set(rig.deadlines.keys) == life.armed, "armed and disarmed unevenly \(event)")
    #expect(!(life.active && life.resumesLater), "started and waiting to resume \(event)")
    #expect(!(life.active && life.starting != nil), "started and starting \(event)")
    #expect(!life.available || life.holds.isEmpty, "available while held \(event)")
    #expect(life.isServing == (life.active || !life.waitingRequests.isEmpty))
    if life.deleted { #expect(!life.active && life.waitingRequests.isEmpty && life.armed.isEmpty) }
}

@Test(arguments: states.indices)
func everyEventInEveryStateKeepsTheInvariants(stateIndex: Int) {
    let state = states[stateIndex]
    for event in events {
        var rig = Rig()
        for step in state.events { rig.take(step) }
        let before = rig.life
        let effects = rig.take(event)
        let context = "after \(event) in state \(state.name)"
        checkInvariants(rig, after: context)
        if before.deleted { #expect(effects.allSatisfy(answersACall), "\(context)") }
        // A Start is answered exactly once: at once, or when its admission ends.
        let answers = effects.filter { if case .answerStart = $0 { true } else { false } }.count
        #expect(answers <= 1, "\(context)")
    }
}
