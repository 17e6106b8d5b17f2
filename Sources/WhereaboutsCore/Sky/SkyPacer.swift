/// When a changed sky is told to the clients: `io.github.whereabouts1.Client.SatellitesChanged` at most once a
/// second.
///
/// A receiver reports its satellites every epoch, often several times a second across its constellations' GSV
/// sequences, and their C/N0 changes nearly every time. The first change after a quiet second is published at
/// once; a change within a second of the last publication waits until that second is over, and only the newest of
/// the skies offered meanwhile is published then, if it still differs from the one published. A sky equal to the
/// published one is never published again.
public struct SkyPacer: Sendable {
    /// The shortest time between two publications.
    public static let minimumInterval: Duration = .seconds(1)

    /// What to do after an offer.
    public enum Decision: Sendable, Equatable {
        /// Publish this sky now.
        case publish([Satellite])
        /// Call ``due(now:)`` at this time: a change waits.
        case wait(until: MonotonicTime)
        /// Nothing: no change, or one already waiting.
        case nothing
    }

    /// The sky last published, which `Satellites` reads.
    public private(set) var published: [Satellite] = []
    private var waiting: [Satellite]?
    private var lastPublication: MonotonicTime?

    /// A pacer that has published an empty sky.
    public init() {}

    /// Takes the newest sky at `now`.
    public mutating func offer(_ sky: [Satellite], now: MonotonicTime) -> Decision {
        if waiting != nil {
            waiting = sky
            return .nothing
        }
        guard sky != published else { return .nothing }
        if let lastPublication, now - lastPublication < Self.minimumInterval {
            waiting = sky
            return .wait(until: lastPublication + Self.minimumInterval)
        }
        return .publish(publish(sky, now: now))
    }

    /// The waiting sky to publish when the wait ``offer(_:now:)`` asked for is over; nil when none differs from the
    /// published one.
    public mutating func due(now: MonotonicTime) -> [Satellite]? {
        guard let sky = waiting else { return nil }
        waiting = nil
        guard sky != published else { return nil }
        return publish(sky, now: now)
    }

    private mutating func publish(_ sky: [Satellite], now: MonotonicTime) -> [Satellite] {
        published = sky
        lastPublication = now
        return sky
    }
}
