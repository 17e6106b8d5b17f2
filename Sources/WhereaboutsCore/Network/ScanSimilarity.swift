/// How much two scans look like the same place, judged by the access points they share.
///
/// Each scan has **anchors**: its access points heard at `anchorSignal` dBm or stronger; when it has fewer than
/// `minimumAnchors` of those, its `minimumAnchors` strongest instead (so a place of weak access points still
/// has anchors). An anchor of either scan is **shared** when the other scan has its address at all, at any
/// signal. The similarity is
///
///     shared anchors / anchors of either scan
///
/// from 0 (no anchor of either scan is in the other) to 1 (every anchor is in both).
///
/// The two thresholds are a hysteresis: an access point must be heard strongly in one scan to count, but only
/// heard in the other to match. Signal jitter moves an access point across the anchor threshold, not out of a
/// scan, so a machine that stays put keeps a similarity near 1, while weak access points, which come and go
/// between scans, are not anchors and cannot lower it. Moving away replaces the anchors, and the similarity falls.
public struct ScanSimilarity: Sendable, Equatable {
    /// Shared anchors over anchors of either scan, in 0...1; 0 when neither scan has any.
    public var similarity: Double
    /// Anchors of either scan that the other scan has too.
    public var shared: Int
    /// Anchors of either scan (each address counted once).
    public var compared: Int

    /// Compares two scans; an address listed more than once in a scan counts with its strongest signal.
    public init(
        _ first: [AccessPointSighting], _ second: [AccessPointSighting], anchorSignal: Int, minimumAnchors: Int
    ) {
        self = ScanProfile(first, anchorSignal: anchorSignal, minimumAnchors: minimumAnchors)
            .similarity(to: ScanProfile(second, anchorSignal: anchorSignal, minimumAnchors: minimumAnchors))
    }

    /// Makes a result from its counts.
    init(shared: Int, compared: Int) {
        self.shared = shared
        self.compared = compared
        self.similarity = compared == 0 ? 0 : Double(shared) / Double(compared)
    }
}

/// A scan prepared for ``ScanSimilarity``: its addresses and its anchors, worked out once.
struct ScanProfile: Sendable {
    /// Every address in the scan.
    let present: Set<BSSID>
    /// The scan's anchors.
    let anchors: Set<BSSID>

    init(_ sightings: [AccessPointSighting], anchorSignal: Int, minimumAnchors: Int) {
        var strongest: [BSSID: Int] = [:]
        for sighting in sightings {
            strongest[sighting.bssid] = max(strongest[sighting.bssid] ?? .min, sighting.signal)
        }
        present = Set(strongest.keys)
        let strong = strongest.filter { $0.value >= anchorSignal }
        if strong.count >= minimumAnchors {
            anchors = Set(strong.keys)
        } else {
            let ordered = strongest.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            anchors = Set(ordered.prefix(max(0, minimumAnchors)).map(\.key))
        }
    }

    func similarity(to other: ScanProfile) -> ScanSimilarity {
        // Anchors are present in their own scan, so an anchor is shared when the other scan has it.
        var compared = anchors.count
        var shared = 0
        for anchor in anchors where other.present.contains(anchor) { shared += 1 }
        for anchor in other.anchors where !anchors.contains(anchor) {
            compared += 1
            if present.contains(anchor) { shared += 1 }
        }
        return ScanSimilarity(shared: shared, compared: compared)
    }
}
