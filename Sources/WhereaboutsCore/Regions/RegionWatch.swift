/// One watched region and where it stands: the rule of ``RegionRule`` applied to it, fix by fix.
///
/// The phase changes so:
/// - a deciding fix (accuracy at most twice the radius, not older than the fix that decided the phase) with a
///   probability of at least ``RegionRule/entryProbability`` makes an undecided, unknown or outside region
///   inside; one of at most ``RegionRule/exitProbability`` makes any region that is not outside outside; one in
///   between changes nothing but dwelling;
/// - an inside region with a dwell time becomes dwelling at the first deciding fix that does not leave it, or
///   the moment, with no fix, at which the dwell time since the entry fix has passed;
/// - an undecided region becomes unknown ``RegionRule/undecidedTimeout`` after it was added.
///
/// The first decision by a fix after the region was added is always reported; later entries only when
/// notify-entry says so, later exits only when notify-exit does. Dwelling and unknown are always reported.
struct RegionWatch: Sendable, Equatable {
    /// Whose region it is.
    var owner: RegionOwner
    /// The region.
    var region: Region
    /// Where it stands.
    var phase: RegionPhase
    /// True once a fix has decided it (since it was added): later changes obey the notify options.
    var decided: Bool
    /// The fix that decided the phase: the entry fix while inside; nil while undecided or unknown.
    var fix: RegionFix?
    /// When it was added, for the undecided timeout.
    var added: WallTime

    /// A region just added at `now`.
    init(owner: RegionOwner, region: Region, added now: WallTime) {
        self.init(owner: owner, region: region, phase: .undecided, decided: false, fix: nil, added: now)
    }

    /// A region as stored.
    init(owner: RegionOwner, region: Region, phase: RegionPhase, decided: Bool, fix: RegionFix?, added: WallTime) {
        self.owner = owner
        self.region = region
        self.phase = phase
        self.decided = decided
        self.fix = fix
        self.added = added
    }

    /// The record ListRegions shows.
    var record: RegionRecord { RegionRecord(region: region, state: phase.state, since: fix?.timestamp) }

    /// When the region becomes dwelling without a fix: inside with a dwell time, that long after the entry fix.
    var dwellDeadline: WallTime? {
        guard phase == .inside, let dwell = region.options.dwell, let fix else { return nil }
        return fix.timestamp.saturatingAdvanced(by: dwell)
    }

    /// When an undecided region becomes unknown.
    var undecidedDeadline: WallTime? {
        phase == .undecided ? added.saturatingAdvanced(by: RegionRule.undecidedTimeout) : nil
    }

    /// Applies `fix` (a valid one); returns the event to report, if any.
    mutating func observe(_ fix: RegionFix) -> RegionEvent? {
        guard RegionRule.decides(accuracy: fix.accuracy, radius: region.radius) else { return nil }
        if let since = self.fix?.timestamp, fix.timestamp < since { return nil }
        let distance = greatCircleDistance(region.latitude, region.longitude, fix.latitude, fix.longitude)
        let probability = RegionRule.probabilityInside(
            distance: distance, radius: region.radius, accuracy: fix.accuracy)
        if probability >= RegionRule.entryProbability {
            switch phase {
            case .inside: return dwellIfDue(at: fix)
            case .dwelling: return nil
            case .undecided, .unknown, .outside: return change(to: .inside, by: fix, notify: region.options.notifyEntry)
            }
        }
        if probability <= RegionRule.exitProbability {
            return phase == .outside ? nil : change(to: .outside, by: fix, notify: region.options.notifyExit)
        }
        return phase == .inside ? dwellIfDue(at: fix) : nil
    }

    /// The dwell time ran out with no fix (at ``dwellDeadline``): dwelling, on the entry fix.
    mutating func dwellReached() -> RegionEvent? {
        guard let deadline = dwellDeadline else { return nil }
        phase = .dwelling
        return event(.dwelling, at: deadline)
    }

    /// The undecided timeout ran out (at ``undecidedDeadline``): unknown.
    mutating func undecidedTimedOut() -> RegionEvent? {
        guard let deadline = undecidedDeadline else { return nil }
        phase = .unknown
        return event(.unknown, at: deadline)
    }

    /// Nothing can decide the region any more: unknown at `now`, unless it is already.
    mutating func becomeUndecidable(now: WallTime) -> RegionEvent? {
        guard phase != .unknown else { return nil }
        phase = .unknown
        fix = nil
        return event(.unknown, at: now)
    }

    private mutating func dwellIfDue(at fix: RegionFix) -> RegionEvent? {
        guard let deadline = dwellDeadline, fix.timestamp >= deadline else { return nil }
        phase = .dwelling
        self.fix = fix
        return event(.dwelling, at: fix.timestamp)
    }

    private mutating func change(to phase: RegionPhase, by fix: RegionFix, notify: Bool) -> RegionEvent? {
        let report = notify || !decided
        self.phase = phase
        self.fix = fix
        decided = true
        return report ? event(phase.state, at: fix.timestamp) : nil
    }

    private func event(_ state: RegionState, at time: WallTime) -> RegionEvent {
        RegionEvent(owner: owner, id: region.id, state: state, fix: state == .unknown ? nil : fix, timestamp: time)
    }
}

extension WallTime {
    /// This time moved by `duration`, stopping at the ends of the range rather than overflowing: a fix's
    /// timestamp is whatever its provider said.
    fileprivate func saturatingAdvanced(by duration: Duration) -> WallTime {
        let (sum, overflow) = microseconds.addingReportingOverflow(duration.wholeMicroseconds)
        return overflow ? WallTime(microseconds: duration > .zero ? .max : .min) : WallTime(microseconds: sum)
    }
}
