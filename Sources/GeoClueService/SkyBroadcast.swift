import DBus
import Loop
import LoopScheduling
import WhereaboutsCore

/// The satellites the receivers see, as the service tells them: `io.github.whereabouts1.Client.Satellites` and
/// `SatellitesChanged`, paced by the core's ``SkyPacer`` to at most once a second.
@BusActor
final class SkyBroadcast {
    /// The sky `Satellites` reads.
    var satellites: [Satellite] { pacer.published }

    /// Called with each sky to publish.
    var onPublish: (@BusActor ([Satellite]) -> Void)?

    private var pacer = SkyPacer()
    private let clock: any WhereaboutsCore.Clock
    private let timers: any TimerScheduler

    init(clock: any WhereaboutsCore.Clock, timers: any TimerScheduler) {
        self.clock = clock
        self.timers = timers
    }

    /// Takes the receivers' newest sky.
    func offer(_ sky: [Satellite]) {
        switch pacer.offer(sky, now: clock.monotonicNow) {
        case .publish(let published): onPublish?(published)
        case .wait(let until):
            _ = timers.scheduleOnBus(after: until - clock.monotonicNow) { [weak self] in self?.due() }
        case .nothing: return
        }
    }

    private func due() {
        if let published = pacer.due(now: clock.monotonicNow) { onPublish?(published) }
    }

    /// The sky as `a(sudddb)`: unknown elevation, azimuth and C/N0 are NaN.
    static func value(of sky: [Satellite]) -> DBusValue {
        .array(
            element: "(sudddb)",
            sky.map { satellite in
                .structure([
                    .string(satellite.constellation.rawValue), .uint32(satellite.id),
                    .double(satellite.elevation ?? .nan), .double(satellite.azimuth ?? .nan),
                    .double(satellite.signalStrength ?? .nan), .boolean(satellite.usedInFix),
                ])
            })
    }
}
