/// The fusion rule: which fix a client gets when several providers run.
///
/// GeoClue's locator (`gclue-locator.c`) is the baseline; the differences are marked *(ours)*.
///
/// 1. A fix with a non-finite position or accuracy is dropped.
/// 2. A fix older than the provider's own previous fix is dropped (reordering within one source). *(ours: GeoClue
///    compares across providers, so one provider's clock skew could starve another.)* A fix from another
///    provider is dropped when it is more than ``crossProviderSkew`` older than a current one that is not stale
///    and whose provider is still running.
/// 3. **Sources that disagree** *(ours)*: a network answer (Wi-Fi, cells, IP) that lies farther from a
///    better-placed source (a recent satellite fix, the static position, the serving cells' answer) than both
///    accuracies and plausible travel allow is **disputed**: dropped, its provider told. A better-placed fix that
///    disputes the current one replaces it whatever step 5 says. ``SourceAgreement`` has the details.
/// 4. **Precise lock**: a fix better than ``lockAccuracy`` from a satellite provider (gpsd, NMEA, replay) locks
///    out every other kind of provider for ``lockDuration`` after that fix. *(ours: the lock ends at once when the
///    locking provider stops or is lost, so a coarse provider takes over without waiting 30 s.)*
/// 5. A fix **less accurate** than the current one from **another** provider is rejected when it lies inside its
///    own accuracy circle around the current position (it adds nothing), or when reaching it would need more than
///    ``maximumSpeed``. *(ours: a provider's own successive fixes are not second-guessed — an edited static file or
///    a replay that loops must move clients; and a current fix older than ``staleAfter`` no longer blocks
///    anything, so a provider that went quiet cannot pin the position.)*
/// 6. Anything else is accepted and becomes the current fix.
public struct FixSelector: Sendable {
    /// How precise a satellite fix must be to take the lock, in metres.
    public static let lockAccuracy = 20.0
    /// How long a lock lasts after the fix that took it.
    public static let lockDuration: Duration = .seconds(30)
    /// The fastest plausible movement, in metres per second (GeoClue's 500 m/s).
    public static let maximumSpeed = 500.0
    /// How old the current fix may be and still block a less accurate one.
    public static let staleAfter: Duration = .seconds(60)
    /// How much older than the current fix another provider's fix may be.
    public static let crossProviderSkew: Duration = .seconds(1)

    private var current: (fix: Fix, received: MonotonicTime)?
    private var lastByProvider: [ProviderKind: WallTime] = [:]
    private var lock: (provider: ProviderKind, until: MonotonicTime)?
    /// Step 3's references: the latest undisputed fix of each kind, and when it was received.
    private var references: [ProviderKind: (fix: Fix, received: MonotonicTime)] = [:]
    /// The disagreements reported, by the disputed kind and its reference's kind, until the disputed kind is
    /// served again.
    private var reported: Set<[ProviderKind]> = []

    public init() {}

    /// The fix clients were last given.
    public var currentFix: Fix? { current?.fix }

    /// Applies the rule to `fix`, received at `now`, where `standing` are the positions the other running providers
    /// hold now (step 3's standing fixes).
    public mutating func offer(
        _ fix: Fix, now: MonotonicTime, standing: @autoclosure () -> [Fix] = []
    ) -> FusionDecision {
        guard fix.latitude.isFinite, fix.longitude.isFinite, fix.horizontalAccuracy.isFinite else { return .rejected }
        if let previous = lastByProvider[fix.provider], fix.timestamp < previous { return .rejected }
        lastByProvider[fix.provider] = fix.timestamp
        if let disagreement = disagreement(of: fix, now: now, standing: standing) {
            return FusionDecision(accepted: false, disagreement: disagreement)
        }
        forgetReferencesDisputed(by: fix, now: now)
        if fix.provider.placementRank != nil { references[fix.provider] = (fix, now) }
        if let lock, lock.until > now, lock.provider != fix.provider { return .rejected }
        let disputedCurrent = disputedCurrentFix(by: fix, now: now)
        if disputedCurrent == nil, let current, current.fix.provider != fix.provider,
            now - current.received < FixSelector.staleAfter
        {
            if fix.timestamp < current.fix.timestamp.advanced(by: .zero - FixSelector.crossProviderSkew) {
                return .rejected
            }
            if fix.horizontalAccuracy > current.fix.horizontalAccuracy {
                let distance = fix.distance(to: current.fix)
                let seconds = max(0.001, fix.timestamp.since(current.fix.timestamp).seconds)
                if distance < fix.horizontalAccuracy || distance / seconds > FixSelector.maximumSpeed {
                    return .rejected
                }
            }
        }
        if fix.provider.isSatellite && fix.horizontalAccuracy < FixSelector.lockAccuracy {
            lock = (fix.provider, now + FixSelector.lockDuration)
        }
        current = (fix, now)
        if !reported.isEmpty { reported = reported.filter { $0.first != fix.provider } }
        return FusionDecision(accepted: true, disagreement: disputedCurrent)
    }

    /// Ends the lock of a provider that stopped or was lost; its last fix no longer blocks others, nor serves as a
    /// reference.
    public mutating func providerLost(_ kind: ProviderKind) {
        if lock?.provider == kind { lock = nil }
        if current?.fix.provider == kind { current = nil }
        lastByProvider[kind] = nil
        references[kind] = nil
        reported = reported.filter { !$0.contains(kind) }
    }

    // MARK: - Step 3

    /// The better-placed reference `fix` disagrees with most, if any: a standing fix, or a recent reference.
    private mutating func disagreement(of fix: Fix, now: MonotonicTime, standing: () -> [Fix]) -> Disagreement? {
        guard let rank = fix.provider.placementRank, rank < SourceAgreement.highestRank else { return nil }
        let recent = references.values.filter { now - $0.received < SourceAgreement.referenceWindow }
        let candidates = standing().map { ($0, now) } + recent.map { ($0.fix, $0.received) }
        var worst: Disagreement?
        for (reference, received) in candidates {
            guard let referenceRank = reference.provider.placementRank, referenceRank > rank else { continue }
            let distance = fix.distance(to: reference)
            let allowed = SourceAgreement.allowedDistance(between: fix, and: reference, elapsed: now - received)
            guard distance > allowed, distance - allowed > (worst.map { $0.distance - $0.allowed } ?? 0) else {
                continue
            }
            worst = Disagreement(
                disputed: fix, reference: reference, distance: distance, allowed: allowed, isNew: false)
        }
        guard var found = worst else { return nil }
        found.isNew = reported.insert([fix.provider, found.reference.provider]).inserted
        return found
    }

    /// The disagreement of the current fix with `fix`, when `fix` is better placed and contradicts it.
    private mutating func disputedCurrentFix(by fix: Fix, now: MonotonicTime) -> Disagreement? {
        guard let current, let rank = fix.provider.placementRank, let currentRank = current.fix.provider.placementRank,
            currentRank < rank, now - current.received < SourceAgreement.referenceWindow
        else { return nil }
        let distance = current.fix.distance(to: fix)
        let allowed = SourceAgreement.allowedDistance(between: current.fix, and: fix, elapsed: now - current.received)
        guard distance > allowed else { return nil }
        let isNew = reported.insert([current.fix.provider, fix.provider]).inserted
        return Disagreement(disputed: current.fix, reference: fix, distance: distance, allowed: allowed, isNew: isNew)
    }

    /// Drops the references of a lower rank than `fix` that it contradicts: a disputed fix is no one's reference.
    private mutating func forgetReferencesDisputed(by fix: Fix, now: MonotonicTime) {
        guard let rank = fix.provider.placementRank else { return }
        for (kind, reference) in references {
            guard let referenceRank = kind.placementRank, referenceRank < rank,
                reference.fix.distance(to: fix)
                    > SourceAgreement.allowedDistance(
                        between: reference.fix, and: fix, elapsed: now - reference.received)
            else { continue }
            references[kind] = nil
        }
    }
}

extension ProviderKind {
    /// True for providers that report satellite fixes.
    public var isSatellite: Bool {
        switch self {
        case .gpsd, .nmea, .replay, .modemGNSS: true
        case .static, .wifi, .ip, .compass, .cell, .cdma: false
        }
    }

    /// True for providers whose fixes carry the compass's headings: those GeoClue 2.6 computes movement for (its
    /// `compute-movement`: the satellite receivers and street-level Wi-Fi), and a static position, where the
    /// device stands (GeoClue 2.6 has no static source); not a cell, a CDMA base station or an IP address, whose
    /// fixes place an area rather than the device.
    public var carriesCompassHeading: Bool {
        switch self {
        case .gpsd, .nmea, .replay, .modemGNSS, .wifi, .static: true
        case .ip, .compass, .cell, .cdma: false
        }
    }
}
