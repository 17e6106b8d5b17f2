import Loop
import WhereaboutsCore

/// The CDMA base station's own position (`[cdma]`), as ModemManager reports it: a coarse fix of the modem, within
/// the cell's reach, taken with GeoClue's accuracy of 1 km (``CDMABaseStation/assumedAccuracy``). Nothing is looked
/// up; nothing leaves the machine.
///
/// It runs for clients at neighbourhood level and above, and is available while some enabled modem offers its
/// CDMA base station location; a position that is not a place is logged once and ignored.
@BusActor
public final class CDMAProvider: LocationProvider {
    public let kind = ProviderKind.cdma
    public let minimumClientLevel = AccuracyLevel.neighborhood
    public var onFix: (@BusActor (Fix) -> Void)?
    public var onAvailabilityChanged: (@BusActor () -> Void)?

    private var modemSource: ModemSource
    private let clock: any WhereaboutsCore.Clock
    private let logger: any Logger
    private var started = false
    /// Each modem's base station, by object path; followed while stopped too, since ModemManager reports it only
    /// when it changes.
    private var stations: [String: CDMABaseStation] = [:]
    private var invalidLogged = false

    /// A provider reading the modems of `modems`.
    public init(modems: any ModemLocationService, clock: any WhereaboutsCore.Clock, logger: any Logger) {
        modemSource = ModemSource(.cdmaBaseStation, of: modems, for: .cdma, serving: .neighborhood)
        self.clock = clock
        self.logger = logger
        modemSource.follow { [weak self] event in self?.handle(event) }
    }

    public var availableLevel: AccuracyLevel { modemSource.availableLevel }

    public var unavailabilityReason: String? { modemSource.unavailability }

    public var details: [String: ProviderDetail] { modemSource.details(reason: unavailabilityReason) }

    public func start() {
        started = true
        modemSource.need()
        refresh()
    }

    public func stop() {
        started = false
        modemSource.release()
    }

    /// Offers the base stations' positions again.
    public func refresh() {
        for modem in stations.keys.sorted() { deliver(modem) }
    }

    private func handle(_ event: ModemLocationEvent) {
        switch event {
        case .availabilityChanged:
            if modemSource.levelChanged(to: availableLevel) { onAvailabilityChanged?() }
        case .location(.cdmaBaseStation(let latitude, let longitude, let modem)):
            do {
                stations[modem] = try CDMABaseStation(latitude: latitude, longitude: longitude)
                deliver(modem)
            } catch {
                stations[modem] = nil
                if !invalidLogged {
                    invalidLogged = true
                    logger.info("CDMA: \(modem): \(error); ignored")
                }
            }
        case .locationGone(let sources, let modem) where sources.contains(.cdmaBaseStation):
            stations[modem] = nil
        case .location, .locationGone:
            return
        }
    }

    private func deliver(_ modem: String) {
        guard started, let station = stations[modem] else { return }
        onFix?(
            Fix(
                latitude: station.latitude, longitude: station.longitude,
                horizontalAccuracy: CDMABaseStation.assumedAccuracy, timestamp: clock.wallNow, provider: .cdma,
                description: "CDMA base station"))
    }
}
