/// The life of one client (`org.freedesktop.GeoClue2.Client`), as a state machine: events in
/// (``ClientEvent``), effects out (``ClientEffect``), no I/O and no timers of its own.
///
/// A client is **started** (GeoClue's `Active`) from a successful admission after `Start` until `Stop`, a hold or
/// its deletion; it is **starting** while the admission of a `Start`, or of its own resumption, runs. Its single-shot
/// requests wait for their admission, then for a fix. It is **held** while any ``ClientHold`` applies: it is then
/// served nothing, `Available` is false, and a client that a hold stopped starts again by itself (``resumesLater``)
/// once every hold has ended.
///
/// Fixes go through the update filter in ``handle(_:)``: another report of the measurement already signalled
/// refreshes its Location in place; below `MinimumUpdateDistance` nothing happens; below GeoClue's thresholds the
/// current Location is refreshed in place; otherwise a new Location is signalled.
public struct ClientLife<AdmissionError: Sendable>: Sendable {
    /// The level a client that does not ask for high accuracy is served at, at most: no satellite receiver.
    public static var powerSavingLevel: AccuracyLevel { .street }

    public typealias Event = ClientEvent<AdmissionError>
    public typealias Effect = ClientEffect<AdmissionError>
    public typealias Failure = ClientFailure<AdmissionError>

    /// GeoClue's thresholds.
    public private(set) var thresholds = Thresholds()
    /// `RequestedAccuracyLevel`, as the owner wrote it.
    public private(set) var requestedLevel = AccuracyLevel.city.rawValue
    /// `HighAccuracy`.
    public private(set) var highAccuracy = true
    /// `MinimumUpdateDistance`, metres.
    public private(set) var minimumUpdateDistance = 0.0
    /// `MonitoringTimeout`, milliseconds.
    public private(set) var monitoringTimeout: UInt32 = 0

    /// GeoClue's `Active`: started with `Start` and not stopped.
    public private(set) var active = false
    /// The level the client is served at: the providers it needs.
    public private(set) var servedLevel = AccuracyLevel.none
    /// The finest level its fixes are shown at: exact, unless the user or administrator limited the app, whose
    /// fixes are then coarsened to that level's grid (``coarsen(_:to:)``).
    public private(set) var shownLevel = AccuracyLevel.exact
    /// True once a fix has been served since the last start.
    public private(set) var hasFixSinceStart = false
    /// `Available`: the providers can deliver and no hold applies.
    public private(set) var available: Bool
    /// What holds the client now.
    public private(set) var holds: Set<ClientHold> = []
    /// True when a hold stopped this started client, which starts again by itself when every hold ends.
    public private(set) var resumesLater = false
    /// The start whose admission runs, if any.
    public var starting: AdmissionPurpose? {
        admissions[.start] != nil ? .start : admissions[.resume] != nil ? .resume : nil
    }
    /// The requests waiting for a fix, oldest first.
    public private(set) var waitingRequests: [RequestID] = []
    /// The timers armed now.
    public private(set) var armed: Set<ClientTimer> = []
    /// True once the client was deleted; it then answers what is still in flight and does nothing else.
    public private(set) var deleted = false

    /// The last fix signalled, and the level it was shown at.
    private var lastSignalled: (fix: Fix, level: AccuracyLevel)?
    /// What the current Location object holds: the last fix signalled, or refreshed in place since.
    private var current: Fix?
    /// An admission running: the holds at its beginning (a hold that arrives meanwhile wins), and a request's
    /// options.
    private struct RunningAdmission {
        var holds: Set<ClientHold>
        var request: (timeout: Duration, maximumAge: Duration?)?
    }

    /// The admissions running.
    private var admissions: [AdmissionPurpose: RunningAdmission] = [:]
    /// How many times `Stop` was called; a `Start` whose admission outlasts a `Stop` does not start the client.
    private var stops = 0
    /// The count of ``stops`` when the running `Start` began.
    private var stopsAtStart = 0
    private let clock: any Clock
    private var effects: [Effect] = []

    /// A new client, not started; `available` is whether the providers can deliver now.
    public init(available: Bool, clock: any Clock) {
        self.available = available
        self.clock = clock
    }

    /// True while the client needs fixes: started, or a request waiting for one.
    public var isServing: Bool { active || !waitingRequests.isEmpty }

    /// The level the providers must serve for this client: the served level, without satellites when the client
    /// saves power.
    public var demandedLevel: AccuracyLevel {
        highAccuracy ? servedLevel : min(servedLevel, ClientLife.powerSavingLevel)
    }

    /// Removes the admission for `purpose`, returning it; the table's storage goes with its last entry, so a client
    /// long started keeps none.
    private mutating func endAdmission(_ purpose: AdmissionPurpose) -> RunningAdmission? {
        let ended = admissions.removeValue(forKey: purpose)
        admissions.releaseUnusedCapacity()
        return ended
    }

    /// Takes `event`, returning what must follow, in order.
    public mutating func handle(_ event: Event) -> [Effect] {
        effects = []
        if deleted {
            answerAfterDeletion(event)
        } else {
            take(event)
        }
        let taken = effects
        effects = []
        return taken
    }

    private mutating func take(_ event: Event) {
        switch event {
        case .start: start()
        case .stop:
            resumesLater = false
            stops += 1
            stop()
        case .requestLocation(let id, let timeout, let maximumAge, let wantsHighAccuracy):
            if let wantsHighAccuracy {
                highAccuracy = wantsHighAccuracy
                if isServing { effects.append(.recount) }
            }
            beginAdmission(.request(id), request: (timeout, maximumAge))
        case .admitted(let purpose, let level, let shown, let latest):
            guard let admission = endAdmission(purpose) else { return }
            admitted(admission, for: purpose, at: level, shown: shown, latest: latest)
        case .notAdmitted(let purpose, let error):
            guard endAdmission(purpose) != nil else { return }
            notAdmitted(purpose, .admission(error))
        case .fix(let fix): offer(fix)
        case .hold(let hold, let reason): suspend(hold, reason: reason)
        case .release(let hold, let reason, let available): resume(hold, reason: reason, available: available)
        case .permittedLevelChanged(let level, let shown, let latest, let available):
            permittedLevelChanged(level, shown: shown, latest: latest, available: available)
        case .revoked:
            resumesLater = false
            halt(failing: .revoked)
            effects.append(.availabilitySignalled(false, reason: "authorisation-changed"))
        case .providersAvailability(let available, let reason):
            setAvailable(available, reason: reason)
            if !available { failWaitingRequests(.unavailable) }
        case .timerFired(let timer): fired(timer)
        case .set(let setting): set(setting)
        case .deleted: delete()
        }
    }

    // MARK: Start and stop

    private mutating func start() {
        if active {
            effects.append(.answerStart(nil))
            return
        }
        guard starting == nil else {
            effects.append(.answerStart(.startInProgress))
            return
        }
        stopsAtStart = stops
        beginAdmission(.start)
    }

    private mutating func beginAdmission(
        _ purpose: AdmissionPurpose, request: (timeout: Duration, maximumAge: Duration?)? = nil
    ) {
        admissions[purpose] = RunningAdmission(holds: holds, request: request)
        effects.append(.admit(purpose))
    }

    /// The admission passed; a hold that arrived while it ran refuses instead, and those it passed are over.
    private mutating func admitted(
        _ admission: RunningAdmission, for purpose: AdmissionPurpose, at level: AccuracyLevel, shown: AccuracyLevel,
        latest: Fix?
    ) {
        let holdsBefore = admission.holds
        if holds.contains(.sessionInactive) && !holdsBefore.contains(.sessionInactive) {
            notAdmitted(purpose, .refused(.sessionInactive))
            return
        }
        if holds.contains(.agentDisabled) && !holdsBefore.contains(.agentDisabled) {
            notAdmitted(purpose, .refused(.disabledByAgent))
            return
        }
        holds.subtract([.sessionInactive, .agentDisabled])
        switch purpose {
        case .start:
            guard stops == stopsAtStart else {
                effects.append(.answerStart(nil))
                return
            }
            activate(at: level, shown: shown)
            effects.append(.answerStart(nil))
            serve()
        case .resume:
            // A hold may have come back, or the owner stopped the client, meanwhile.
            guard holds.isEmpty, resumesLater else { return }
            activate(at: level, shown: shown)
            serve()
        case .request(let id):
            guard let options = admission.request else { return }
            if let maximumAge = options.maximumAge, let latest, clock.wallNow.since(latest.timestamp) <= maximumAge {
                effects.append(.answerRequests([id], present(latest, servedAt: level, shownAt: shown)))
                return
            }
            arm(.request(id), after: options.timeout)
            if !active { (servedLevel, shownLevel) = (level, shown) }
            let wasServing = isServing
            waitingRequests.append(id)
            effects.append(wasServing ? .recount : .activityChanged)
        }
    }

    /// Answers for the admission for `purpose`, no longer running, that refused.
    private mutating func notAdmitted(_ purpose: AdmissionPurpose, _ failure: Failure) {
        switch purpose {
        case .start:
            effects.append(.answerStart(failure))
        case .resume:
            if holds.isEmpty { resumesLater = false }
            effects.append(.staysStopped(failure))
        case .request(let id):
            effects.append(.failRequests([id], failure))
        }
    }

    /// Makes the client started at `level`, its fixes shown at `shown`, telling the owner.
    private mutating func activate(at level: AccuracyLevel, shown: AccuracyLevel) {
        active = true
        resumesLater = false
        hasFixSinceStart = false
        servedLevel = level
        shownLevel = shown
        effects.append(.activeChanged(true))
    }

    /// Begins serving a started client: its monitoring timer, and the providers its level needs.
    private mutating func serve() {
        armMonitoring()
        effects.append(.activityChanged)
    }

    /// No more fixes; the current Location stays.
    private mutating func stop() {
        guard active else { return }
        active = false
        armMonitoring()
        effects.append(.activeChanged(false))
        effects.append(.activityChanged)
    }

    /// Fails the waiting requests with `failure` and stops the client.
    private mutating func halt(failing failure: Failure) {
        let wasServing = isServing
        let wasActive = active
        failRequests(waitingRequests, failure)
        waitingRequests.removeAll()
        stop()
        if wasServing && !wasActive { effects.append(.activityChanged) }
    }

    // MARK: Holds

    /// Holds the client: waiting requests fail, a started client stops and starts again by itself once every
    /// hold has ended, and the owner hears `AvailabilityChanged(false, reason)`.
    private mutating func suspend(_ hold: ClientHold, reason: String) {
        holds.insert(hold)
        if active { resumesLater = true }
        halt(failing: .held(hold))
        setAvailable(false, reason: reason)
    }

    /// Ends a hold. Once none is left, the owner hears whether location is available again, and a client the holds
    /// stopped starts again, through a new admission.
    private mutating func resume(_ hold: ClientHold, reason: String, available: Bool) {
        holds.remove(hold)
        guard holds.isEmpty else { return }
        setAvailable(available, reason: reason)
        guard resumesLater, !active, starting == nil else { return }
        beginAdmission(.resume)
    }

    /// A permitted level of none holds the client (`agent-disabled`) until it rises again (`agent-enabled`); a
    /// started client is served at a new level at once, with the latest fix again.
    private mutating func permittedLevelChanged(
        _ level: AccuracyLevel, shown: AccuracyLevel, latest: Fix?, available: Bool
    ) {
        if level == .none {
            suspend(.agentDisabled, reason: "agent-disabled")
            return
        }
        if holds.contains(.agentDisabled) {
            resume(.agentDisabled, reason: "agent-enabled", available: available)
            return
        }
        guard isServing, level != servedLevel || shown != shownLevel else { return }
        if level != servedLevel {
            servedLevel = level
            effects.append(.servedLevelChanged(level))
            effects.append(.activityChanged)
        }
        shownLevel = shown
        if let latest { stream(latest) }
    }

    /// `Available` follows the providers, and is false while the client is held.
    private mutating func setAvailable(_ value: Bool, reason: String) {
        let value = value && holds.isEmpty
        guard value != available else { return }
        available = value
        effects.append(.availableChanged(value))
        effects.append(.availabilitySignalled(value, reason: reason))
    }

    // MARK: Requests and timers

    private mutating func failRequests(_ ids: [RequestID], _ failure: Failure) {
        guard !ids.isEmpty else { return }
        for id in ids { disarm(.request(id)) }
        effects.append(.failRequests(ids, failure))
    }

    /// Fails the waiting requests, leaving a started client as it is.
    private mutating func failWaitingRequests(_ failure: Failure) {
        guard !waitingRequests.isEmpty else { return }
        failRequests(waitingRequests, failure)
        waitingRequests.removeAll()
        if !active { effects.append(.activityChanged) }
    }

    private mutating func fired(_ timer: ClientTimer) {
        guard armed.remove(timer) != nil else { return }
        switch timer {
        case .monitoring:
            effects.append(.updatesTimedOut)
            armMonitoring()
        case .request(let id):
            waitingRequests.removeAll { $0 == id }
            effects.append(.failRequests([id], .timedOut))
            if !isServing { effects.append(.activityChanged) }
        }
    }

    private mutating func arm(_ timer: ClientTimer, after delay: Duration) {
        disarm(timer)
        armed.insert(timer)
        effects.append(.arm(timer, after: delay))
    }

    private mutating func disarm(_ timer: ClientTimer) {
        guard armed.remove(timer) != nil else { return }
        effects.append(.disarm(timer))
    }

    /// Restarts the monitoring timer while the client is started with a `MonitoringTimeout`.
    private mutating func armMonitoring() {
        disarm(.monitoring)
        guard active, monitoringTimeout > 0 else { return }
        arm(.monitoring, after: .milliseconds(Int(monitoringTimeout)))
    }

    private mutating func set(_ setting: ClientSetting) {
        switch setting {
        case .distanceThreshold(let metres): thresholds.distance = metres
        case .timeThreshold(let seconds):
            thresholds.time = seconds
            if isServing { effects.append(.recount) }
        case .requestedLevel(let level): requestedLevel = level
        case .highAccuracy(let wanted):
            highAccuracy = wanted
            if isServing { effects.append(.activityChanged) }
        case .minimumUpdateDistance(let metres): minimumUpdateDistance = metres
        case .monitoringTimeout(let milliseconds):
            monitoringTimeout = milliseconds
            armMonitoring()
        }
    }

    // MARK: Fixes

    /// Answers the waiting requests, then, when started, streams `fix`.
    private mutating func offer(_ fix: Fix) {
        if !waitingRequests.isEmpty {
            let waiting = waitingRequests
            waitingRequests.removeAll()
            for id in waiting { disarm(.request(id)) }
            effects.append(.answerRequests(waiting, present(fix, servedAt: servedLevel, shownAt: shownLevel)))
            if !active { effects.append(.activityChanged) }
        }
        stream(fix)
    }

    /// The update filter: signals `fix` to a started client at its served level, by the threshold rules; another
    /// report of the measurement signalled since the start at the same level (same provider, same fix time)
    /// refreshes its Location in place.
    private mutating func stream(_ fix: Fix) {
        guard active else { return }
        let served = present(fix, servedAt: servedLevel, shownAt: shownLevel)
        if hasFixSinceStart, let lastSignalled, lastSignalled.level == shownLevel, let current,
            current.provider == served.provider, current.timestamp == served.timestamp
        {
            // Another report of the measurement already signalled (gpsd answers ?POLL mid-epoch with part of the
            // epoch, and the full report follows): refreshed in place, never signalled twice.
            if current != served { refresh(with: served) }
            return
        }
        hasFixSinceStart = true
        if minimumUpdateDistance > 0, let lastSignalled, served.distance(to: lastSignalled.fix) < minimumUpdateDistance
        {
            return
        }
        armMonitoring()
        if current != nil, thresholds.decide(served, lastSignalled: lastSignalled?.fix) == .updateInPlace {
            refresh(with: served)
            return
        }
        lastSignalled = (served, shownLevel)
        current = served
        effects.append(.signal(served))
    }

    private mutating func refresh(with fix: Fix) {
        current = fix
        effects.append(.refresh(fix))
    }

    // MARK: Deletion

    private mutating func delete() {
        deleted = true
        failRequests(waitingRequests, .deleted)
        waitingRequests.removeAll()
        disarm(.monitoring)
        active = false
    }

    /// After deletion, only the admissions still running are answered: they fail.
    private mutating func answerAfterDeletion(_ event: Event) {
        let (purpose, failure): (AdmissionPurpose, Failure)
        switch event {
        case .admitted(let admitted, _, _, _): (purpose, failure) = (admitted, .deleted)
        case .notAdmitted(let refused, let error): (purpose, failure) = (refused, .admission(error))
        default: return
        }
        guard endAdmission(purpose) != nil else { return }
        notAdmitted(purpose, failure)
    }
}
