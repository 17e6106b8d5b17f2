/// The fusion rule: which fix a client gets when several providers run.
///
/// GeoClue's locator (`gclue-locator.c`) is the baseline; the differences are marked *(ours)*.
///
/// 1. A fix with a non-finite position or accuracy is dropped.
/// 2. A fix older than the provider's own previous fix is dropped (reordering within one source). *(ours: GeoClue
///    compares across providers, so one provider's clock skew could starve another.)* A fix from another
///    provider is dropped when it is more than ``crossProviderSkew`` older than a current one that is not stale
///    and whose provider is still running.
/// 3. **Precise lock**: a fix better than ``lockAccuracy`` from a satellite provider (gpsd, NMEA, replay) locks
///    out every other kind of provider for ``lockDuration`` after that fix. *(ours: the lock ends at once when the
///    locking provider stops or is lost, so a coarse provider takes over without waiting 30 s.)*
/// 4. A fix **less accurate** than the current one from **another** provider is rejected when it lies inside its
///    own accuracy circle around the current position (it adds nothing), or when reaching it would need more than
///    ``maximumSpeed``. *(ours: a provider's own successive fixes are not second-guessed — an edited static file or
///    a replay that loops must move clients; and a current fix older than ``staleAfter`` no longer blocks
///    anything, so a provider that went quiet cannot pin the position.)*
/// 5. Anything else is accepted and becomes the current fix.
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

    public init() {}

    /// The fix clients were last given.
    public var currentFix: Fix? { current?.fix }

    /// Applies the rule to `fix`, received at `now`; true when it is accepted.
    public mutating func offer(_ fix: Fix, now: MonotonicTime) -> Bool {
        guard fix.latitude.isFinite, fix.longitude.isFinite, fix.horizontalAccuracy.isFinite else { return false }
        if let previous = lastByProvider[fix.provider], fix.timestamp < previous { return false }
        lastByProvider[fix.provider] = fix.timestamp
        if let lock, lock.until > now, lock.provider != fix.provider { return false }
        if let current, current.fix.provider != fix.provider, now - current.received < FixSelector.staleAfter,
            fix.timestamp < current.fix.timestamp.advanced(by: .zero - FixSelector.crossProviderSkew)
        {
            return false
        }
        if let current, current.fix.provider != fix.provider, now - current.received < FixSelector.staleAfter,
            fix.horizontalAccuracy > current.fix.horizontalAccuracy
        {
            let distance = fix.distance(to: current.fix)
            let seconds = max(0.001, fix.timestamp.since(current.fix.timestamp).seconds)
            if distance < fix.horizontalAccuracy || distance / seconds > FixSelector.maximumSpeed { return false }
        }
        if fix.provider.isSatellite && fix.horizontalAccuracy < FixSelector.lockAccuracy {
            lock = (fix.provider, now + FixSelector.lockDuration)
        }
        current = (fix, now)
        return true
    }

    /// Ends the lock of a provider that stopped or was lost; its last fix no longer blocks others.
    public mutating func providerLost(_ kind: ProviderKind) {
        if lock?.provider == kind { lock = nil }
        if current?.fix.provider == kind { current = nil }
        lastByProvider[kind] = nil
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
