import WhereaboutsCore

/// What a network provider tells `io.github.whereabouts1.Manager.Providers` and `whereabouts status` about its
/// lookups: how many requests it sent, and when its last lookup was, how it ended and where its answer came from.
struct LookupRecord {
    /// Requests sent to the web service.
    private(set) var requests: UInt32 = 0
    private var last: (time: WallTime, outcome: String, source: String?, message: String?)?

    mutating func sent() { requests &+= 1 }

    /// Records a lookup that ended with `outcome` (`position`, `not-found`, ...), answered by `source`
    /// (`network`, `cache`, `learned`), with `message` explaining a failure.
    mutating func ended(at time: WallTime, _ outcome: String, source: String? = nil, message: String? = nil) {
        last = (time, outcome, source, message)
    }

    /// The details for the provider's row.
    var details: [String: ProviderDetail] {
        var details: [String: ProviderDetail] = ["requests": .count(requests)]
        if let last {
            details["last-lookup"] = .time(last.time)
            details["last-outcome"] = .text(last.outcome)
            if let source = last.source { details["last-source"] = .text(source) }
            if let message = last.message { details["last-message"] = .text(message) }
        }
        return details
    }
}

/// Why a web service cannot be used now, as the reason word of `AvailabilityChanged` and `Providers`.
enum ServiceProblem: String {
    /// No connection: the network is down, the host does not resolve, nothing listens, or it timed out.
    case unreachable = "service-unreachable"
    /// It answered with a server error, or with something that is not a valid answer.
    case failing = "service-error"
    /// It refused the request (400, 403: a bad or exhausted key).
    case refused = "service-refused"
}

/// What a provider knows of its web service's state: the problem its last lookup showed, logged once each time it
/// changes rather than at every failure.
struct ServiceHealth {
    /// How the provider's log lines begin: `Wi-Fi`, `cells`, `IP positioning`.
    let label: String
    /// The service's URL, logged without its query (``loggableURL(_:)``).
    let url: String
    /// What a warning adds about the provider's state while the service fails, e.g. that known places are still
    /// located; empty for nothing.
    let whileFailing: String
    /// The problem the last lookup showed; nil while the service answers.
    private(set) var problem: ServiceProblem?

    /// Notes the state a lookup showed (`newProblem`, explained by `message`, the next try at `retryAt`, seen at
    /// `now`), logging to `logger` when it changed; true when it did.
    @discardableResult
    mutating func note(
        _ newProblem: ServiceProblem?, _ message: String, retryAt: MonotonicTime?, now: MonotonicTime,
        logger: any Logger
    ) -> Bool {
        guard newProblem != problem else { return false }
        if newProblem != nil {
            let retry = retryAt.map { " (next try in \(Int(($0 - now).seconds.rounded())) s)" } ?? ""
            logger.warning("\(label): \(loggableURL(url)): \(message)\(retry)\(whileFailing)")
        } else {
            logger.notice("\(label): \(loggableURL(url)) answers again")
        }
        problem = newProblem
        return true
    }
}

extension IchnaeaOutcome {
    /// The outcome's word in ``LookupRecord`` and its explanation, if it is a failure.
    var summary: (outcome: String, message: String?) {
        switch self {
        case .position: ("position", nil)
        case .notFound: ("not-found", nil)
        case .refused(let status, let message): ("refused", "HTTP \(status): \(message)")
        case .serverTrouble(let status, let message): ("server-error", "HTTP \(status): \(message)")
        case .malformed(let why): ("malformed", why)
        }
    }

    /// The problem the outcome shows with the service, nil when the service works.
    var problem: ServiceProblem? {
        switch self {
        case .position, .notFound: nil
        case .refused: .refused
        case .serverTrouble, .malformed: .failing
        }
    }
}
