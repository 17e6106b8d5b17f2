/// Decides when a Wi-Fi scan differs enough from the one the last answer was for to need a new lookup.
///
/// Scans come every 10 s, and a machine that stays put hears the same access points with signals that jitter
/// by several dBm, while weak ones come and go. Looking up every scan would ask the service 360 times an hour
/// for the same place. The rule:
///
/// 1. Fewer than ``AccessPointSelection/minimumForQuery`` usable access points: no lookup (none is possible).
/// 2. No answer yet: look up.
/// 3. Otherwise the scan is compared with the scan of the last answer (``ScanSimilarity``, anchors at
///    ``anchorSignal`` dBm or stronger, at least ``minimumAnchors`` per scan). The place has **changed** when
///    the similarity is below ``changedBelow``.
/// 4. A change is looked up once it has lasted ``persistence`` consecutive scans — one odd scan (a radio
///    hiccup, a bus full of hotspots passing by) is not a move — or at once when it is **complete**: no
///    anchor of either scan is in the other.
/// 5. A place that has not changed is not looked up again, with one exception: when its answer was
///    ``IchnaeaOutcome/notFound``, it is asked again once ``notFoundRetry`` has passed since (the service may
///    have learnt the access points from others' submissions meanwhile).
///
/// Only answers change the reference: ``looked(up:outcome:now:)`` with a position or not-found. A refusal, server
/// trouble or a malformed answer leaves everything as it was, so the next scan still needs the lookup and
/// ``LookupBackoff`` decides when it may be tried.
///
/// Why it holds: an anchor is heard at −75 dBm or better in one scan, so with ±8 dB jitter its mean is −83 dBm
/// or better, and only the few access points near that edge, which are weak enough to come and go, ever lower
/// the similarity. In a simulation of a flat (8 access points from −45 to −79 dBm always heard, 12 from −81 to
/// −95 dBm each heard in a scan with a probability of 0.3 to 0.6, ±8 to ±10 dB of jitter, the 16 strongest
/// kept) 100 hours of scans never came below 0.62, against the 0.5 of a change; the tests run such hours.
/// Moving to a place where most strong access points differ leaves most anchors unmatched, and the second scan
/// there triggers exactly one lookup, after which the new scan is the reference.
public struct QueryThrottle: Sendable {
    /// Access points heard this strongly (dBm) anchor a scan.
    public static let anchorSignal = -75
    /// A scan with fewer anchors than this is anchored by its strongest access points.
    public static let minimumAnchors = 3
    /// A similarity below this is a change of place.
    public static let changedBelow = 0.5
    /// How many consecutive changed scans make a move.
    public static let persistence = 2
    /// How long a place the service did not know is left before asking again.
    public static let notFoundRetry: Duration = .seconds(600)

    /// What the last answer was for.
    private struct Reference: Sendable {
        let profile: ScanProfile
        let found: Bool
        let answered: MonotonicTime
    }

    private var reference: Reference?
    private var changedScans = 0
    /// The comparison made by the last ``needsLookup(_:now:)`` that had a reference, for diagnostics.
    public private(set) var lastComparison: ScanSimilarity?

    /// A throttle that has seen no answer.
    public init() {}

    /// True when `usable` (``AccessPointSelection/usable(_:)`` of a scan made at `now`) should be looked up.
    ///
    /// Call it once per scan: it counts consecutive changed scans. It stays true, scan after scan, until an
    /// answer is recorded with ``looked(up:outcome:now:)``.
    public mutating func needsLookup(_ usable: [AccessPoint], now: MonotonicTime) -> Bool {
        guard Set(usable.map(\.bssid)).count >= AccessPointSelection.minimumForQuery else { return false }
        guard let reference else { return true }
        let comparison = reference.profile.similarity(to: QueryThrottle.profile(usable.map(\.sighting)))
        lastComparison = comparison
        guard comparison.similarity < QueryThrottle.changedBelow else {
            changedScans = 0
            return !reference.found && now - reference.answered >= QueryThrottle.notFoundRetry
        }
        changedScans += 1
        return comparison.shared == 0 || changedScans >= QueryThrottle.persistence
    }

    /// Records the outcome of looking up `usable` at `now` (from the service or from ``PositionCache``).
    ///
    /// A position or ``IchnaeaOutcome/notFound`` makes `usable` the reference; any other outcome is no answer
    /// and changes nothing.
    public mutating func looked(up usable: [AccessPoint], outcome: IchnaeaOutcome, now: MonotonicTime) {
        let found: Bool
        switch outcome {
        case .position: found = true
        case .notFound: found = false
        case .refused, .serverTrouble, .malformed: return
        }
        reference = Reference(profile: QueryThrottle.profile(usable.map(\.sighting)), found: found, answered: now)
        changedScans = 0
    }

    /// Forgets the reference, so that the next usable scan is looked up (the service's URL changed, or the
    /// Wi-Fi source restarted after a long pause).
    public mutating func reset() {
        reference = nil
        changedScans = 0
        lastComparison = nil
    }

    private static func profile(_ sightings: [AccessPointSighting]) -> ScanProfile {
        ScanProfile(sightings, anchorSignal: anchorSignal, minimumAnchors: minimumAnchors)
    }
}
