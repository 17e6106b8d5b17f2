/// Step 3 of the fusion rule (``FixSelector``), *(ours)*: a network answer that a better-placed source contradicts
/// is not served.
///
/// Ichnaea-compatible services place an access point or a cell wherever it was last seen, so a database cluster
/// gone bad, or a network that moved, gives an answer kilometres off with an accuracy of a few metres; the finer
/// answer would then win. Sources are ranked by how far their positions are trusted (``ProviderKind/placementRank``):
/// a satellite fix or the administrator's static position, then the serving cells' answer, then Wi-Fi, then the IP
/// address. A fix is checked against every **reference** of a higher rank:
/// - the latest fix of each provider kind received within ``referenceWindow`` (a satellite fix a minute old, the
///   last Wi-Fi answer for an IP answer), and
/// - the position a running provider holds now, its *standing* fix (the serving cells' answer, which holds as long
///   as the cells do, however long ago it was first given).
///
/// The two **disagree** when they lie farther apart than both accuracies plus the travel ``plausibleSpeed`` allows
/// since the reference was received (nothing for a standing fix). The lower-ranked fix is then *disputed*: it is not
/// served, whichever came first; its provider is told (Wi-Fi forgets that answer and does not keep it), and the
/// disagreement is reported once until that kind of source is served again.
public enum SourceAgreement {
    /// How long a fix serves as a reference after it was received.
    public static let referenceWindow: Duration = .seconds(300)
    /// The fastest travel allowed between a reference and a fix, in metres per second: 70 m/s (252 km/h), a
    /// motorway or an intercity train; the networks of high-speed trains and aircraft are moving networks, left out
    /// of Wi-Fi queries before they could be compared.
    public static let plausibleSpeed = 70.0
    /// The rank of the best-placed sources, which nothing disputes.
    public static let highestRank = 3

    /// How far apart `fix` and `reference` may be, in metres, when the reference was received `elapsed` before the
    /// fix: their accuracies plus the plausible travel.
    public static func allowedDistance(between fix: Fix, and reference: Fix, elapsed: Duration) -> Double {
        fix.horizontalAccuracy + reference.horizontalAccuracy + plausibleSpeed * max(0, elapsed.seconds)
    }
}

/// A fix the fusion rule did not serve, or stopped serving, because a better-placed source contradicts it
/// (``SourceAgreement``).
public struct Disagreement: Sendable, Equatable {
    /// The fix not served: a network answer.
    public var disputed: Fix
    /// The better-placed fix it contradicts.
    public var reference: Fix
    /// How far apart they are, in metres.
    public var distance: Double
    /// How far apart they could have been, in metres: both accuracies and the plausible travel.
    public var allowed: Double
    /// True for the first disagreement between these two kinds of source since the disputed kind was last served;
    /// the one to log.
    public var isNew: Bool

    public init(disputed: Fix, reference: Fix, distance: Double, allowed: Double, isNew: Bool) {
        self.disputed = disputed
        self.reference = reference
        self.distance = distance
        self.allowed = allowed
        self.isNew = isNew
    }
}

/// What the fusion rule decided about one fix (``FixSelector/offer(_:now:standing:)``).
public struct FusionDecision: Sendable, Equatable {
    /// Whether the fix is served: it becomes the current fix.
    public var accepted: Bool
    /// The disagreement the fix met: it is the disputed one (not accepted), or the current fix it replaced is.
    public var disagreement: Disagreement?

    public init(accepted: Bool, disagreement: Disagreement? = nil) {
        self.accepted = accepted
        self.disagreement = disagreement
    }

    /// A fix dropped by another step.
    public static let rejected = FusionDecision(accepted: false)
}

extension ProviderKind {
    /// How far its positions are trusted when two sources disagree (``SourceAgreement``), higher first: 3 for a
    /// measured or configured position (satellite receivers, the static source), 2 for the network's cells (and a
    /// CDMA base station's own position), 1 for Wi-Fi, 0 for the IP address; nil for the compass, which places
    /// nothing.
    public var placementRank: Int? {
        switch self {
        case .gpsd, .nmea, .replay, .modemGNSS, .static: 3
        case .cell, .cdma: 2
        case .wifi: 1
        case .ip: 0
        case .compass: nil
        }
    }
}
