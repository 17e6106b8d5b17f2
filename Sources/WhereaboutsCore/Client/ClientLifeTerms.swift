/// Why the service holds a client: it keeps the client but serves it nothing until every hold ends.
public enum ClientHold: Hashable, Sendable, CaseIterable {
    /// Location services are switched off.
    case servicesDisabled
    /// The app is authorised *when in use*, and its login session is not active.
    case sessionInactive
    /// The user's agent allows no location (`MaxAccuracyLevel` 0).
    case agentDisabled
}

/// One single-shot request (`RequestLocation`) of a client, numbered by whoever feeds the client's life.
public struct RequestID: Hashable, Sendable, Comparable {
    public let number: UInt64

    public init(_ number: UInt64) { self.number = number }

    public static func < (lhs: RequestID, rhs: RequestID) -> Bool { lhs.number < rhs.number }
}

/// What an admission (the checks of an app: configuration, polkit or the stored decisions, the agent, the login
/// session) is run for.
public enum AdmissionPurpose: Hashable, Sendable {
    /// The owner's `Start`.
    case start
    /// The client starting again by itself once the holds that stopped it ended.
    case resume
    /// A `RequestLocation`.
    case request(RequestID)
}

/// A client's timers, which whoever feeds the client's life arms and fires.
public enum ClientTimer: Hashable, Sendable {
    /// `MonitoringTimeout`: no update within it sends `UpdatesTimedOut`.
    case monitoring
    /// A `RequestLocation`'s time limit.
    case request(RequestID)
}

/// Why a call the client answers (`Start`, `RequestLocation`) fails.
///
/// `AdmissionError` is the admission's own failure (a D-Bus error in the service), passed through unchanged.
public enum ClientFailure<AdmissionError: Sendable>: Sendable {
    /// The admission refused, for its own reason.
    case admission(AdmissionError)
    /// A hold that arrived while the admission ran: it wins over the admission's success.
    case refused(Refusal)
    /// `Start` while a start (the owner's or the client's own resumption) is in progress.
    case startInProgress
    /// No fix within the request's time limit.
    case timedOut
    /// The service held the client.
    case held(ClientHold)
    /// The providers went away.
    case unavailable
    /// The app's authorisation was revoked.
    case revoked
    /// The client was deleted.
    case deleted
}

extension ClientFailure: Equatable where AdmissionError: Equatable {}

/// A writable property of a client that its life depends on.
public enum ClientSetting: Sendable, Equatable {
    /// `DistanceThreshold`, metres.
    case distanceThreshold(UInt32)
    /// `TimeThreshold`, seconds.
    case timeThreshold(UInt32)
    /// `RequestedAccuracyLevel`, as the owner wrote it; read at the next admission.
    case requestedLevel(UInt32)
    /// `HighAccuracy`: false keeps the client off satellite receivers.
    case highAccuracy(Bool)
    /// `MinimumUpdateDistance`, metres, finite and ≥ 0.
    case minimumUpdateDistance(Double)
    /// `MonitoringTimeout`, milliseconds; 0 = none.
    case monitoringTimeout(UInt32)
}

/// What happens to a client: the owner's calls and settings, the admission's answers, fixes, holds, timers.
public enum ClientEvent<AdmissionError: Sendable>: Sendable {
    /// `Start`, its arguments valid.
    case start
    /// `Stop`.
    case stop
    /// `RequestLocation`, its options valid: a time limit, the oldest cached fix that answers it at once, and the
    /// `high-accuracy` option when given.
    case requestLocation(RequestID, timeout: Duration, maximumAge: Duration?, highAccuracy: Bool?)
    /// The admission for `purpose` passed at `level`, its fixes shown no finer than `shown` (exact unless the user or
    /// administrator limited the app: ``AuthorisationRule/shownLevel(requested:approximate:agentAllowance:cap:)``);
    /// `latest` is the latest fix any provider produced.
    case admitted(AdmissionPurpose, level: AccuracyLevel, shown: AccuracyLevel = .exact, latest: Fix?)
    /// The admission for `purpose` refused.
    case notAdmitted(AdmissionPurpose, AdmissionError)
    /// A provider's fix, as fused.
    case fix(Fix)
    /// The service holds the client for `hold`; the owner hears `reason`.
    case hold(ClientHold, reason: String)
    /// `hold` ended; `available` is whether the providers can deliver now.
    case release(ClientHold, reason: String, available: Bool)
    /// The finest level the client may get changed (the user's agent cap), and with it the level its fixes are
    /// shown at; `latest` is the latest fix, served again at the new level; `available` as in
    /// ``release(_:reason:available:)``.
    case permittedLevelChanged(AccuracyLevel, shown: AccuracyLevel = .exact, latest: Fix?, available: Bool)
    /// The app's authorisation was revoked.
    case revoked
    /// The providers can now deliver (or no longer can), for `reason`.
    case providersAvailability(Bool, reason: String)
    /// A timer armed by ``ClientEffect/arm(_:after:)`` is due.
    case timerFired(ClientTimer)
    /// The owner wrote a property.
    case set(ClientSetting)
    /// The client is deleted (by its owner, or its owner left).
    case deleted
}

/// What a client's life asks of the world, in order: messages to send, calls to answer, checks to run, timers.
public enum ClientEffect<AdmissionError: Sendable>: Sendable {
    /// Run the admission for `purpose` and answer with ``ClientEvent/admitted(_:level:latest:)`` or
    /// ``ClientEvent/notAdmitted(_:_:)``.
    case admit(AdmissionPurpose)
    /// Answer the owner's `Start`: nil, it succeeded (or was overtaken by a `Stop`).
    case answerStart(ClientFailure<AdmissionError>?)
    /// Answer these `RequestLocation` calls with one Request object holding `fix`, served at its level already.
    case answerRequests([RequestID], Fix)
    /// Fail these `RequestLocation` calls.
    case failRequests([RequestID], ClientFailure<AdmissionError>)
    /// The `Active` property changed.
    case activeChanged(Bool)
    /// The `Available` property changed.
    case availableChanged(Bool)
    /// Signal `AvailabilityChanged(available, reason)`.
    case availabilitySignalled(Bool, reason: String)
    /// Publish `fix` (served at its level already) as a new Location object: the `Location` property and
    /// `LocationUpdated`.
    case signal(Fix)
    /// Put `fix` into the current Location object in place, without `LocationUpdated`.
    case refresh(Fix)
    /// Signal `UpdatesTimedOut`.
    case updatesTimedOut
    /// Arm `timer` to fire after `delay`, replacing none (a timer is disarmed before it is armed again).
    case arm(ClientTimer, after: Duration)
    /// Disarm `timer`, which is armed.
    case disarm(ClientTimer)
    /// What the client adds to the activity (level, whether it is started) changed.
    case recount
    /// The client started or stopped needing fixes: count it again, and a client just started while the providers
    /// run gets the latest fix.
    case activityChanged
    /// The client is now served at `level`, after its permitted level changed.
    case servedLevelChanged(AccuracyLevel)
    /// The client does not start again by itself after its holds ended: the admission refused.
    case staysStopped(ClientFailure<AdmissionError>)
}

extension ClientEvent: Equatable where AdmissionError: Equatable {}
extension ClientEffect: Equatable where AdmissionError: Equatable {}
