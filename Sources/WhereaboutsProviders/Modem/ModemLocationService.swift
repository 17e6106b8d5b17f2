import Loop
import WhereaboutsCore

/// Who needs which of the modems' location sources: each modem provider says what it needs, and the service sets
/// up the union on the modems.
public enum ModemLocationConsumer: Hashable, Sendable {
    /// ``ModemGNSSProvider``: the GNSS receiver's NMEA.
    case gnss
    /// ``CellProvider``: the serving cell.
    case cell
    /// ``CDMAProvider``: the CDMA base station.
    case cdma
}

/// Something a modem reported through its `Location` property, already checked for type.
public enum ModemLocationUpdate: Sendable, Equatable {
    /// The latest NMEA sentences of each type, separated by CR LF, from the modem at `modem` (its object path).
    case nmea(String, modem: String)
    /// The 3GPP location text (`MCC,MNC,LAC,CI,TAC`) and the modem's access technologies now.
    case servingCell(String, AccessTechnologies, modem: String)
    /// The CDMA base station's position, degrees.
    case cdmaBaseStation(latitude: Double, longitude: Double, modem: String)
}

/// What a ``ModemLocationService`` tells its observers.
public enum ModemLocationEvent: Sendable, Equatable {
    /// Which sources can be had, or why not, may have changed (``ModemLocationService/unavailability(of:)``).
    case availabilityChanged
    /// A modem reported a location.
    case location(ModemLocationUpdate)
    /// What the modem at the object path `modem` last reported for `sources` no longer holds: ModemManager emptied
    /// those entries of its `Location` (signalling or the source was turned off, so it is followed no more), the
    /// modem or its location interface went, or ModemManager left.
    case locationGone(ModemLocationSources, modem: String)
}

/// The modems' location, as the modem providers use it: ModemManager's (``ModemManagerClient`` in the daemon), or a
/// test's stand-in.
@BusActor
public protocol ModemLocationService: AnyObject {
    /// Nil when some modem can give `source` now; otherwise why not, as an `AvailabilityChanged` reason word
    /// (`no-modem`, `modem-disabled`, `modem-locked`, `modem-unsupported`, `modem-unauthorised`).
    func unavailability(of source: ModemLocationSources) -> String?
    /// Calls `observer` with every event from now on.
    func observe(_ observer: @escaping @BusActor (ModemLocationEvent) -> Void)
    /// Says that `consumer` now needs exactly `sources` (empty: nothing); the modems are set up with what all the
    /// consumers need, and sources nobody needs any longer are released.
    func setNeeded(_ sources: ModemLocationSources, by consumer: ModemLocationConsumer)
    /// Paces the GNSS receivers: at most one fix every `seconds` (0: as often as they have one).
    func setGPSRefreshRate(_ seconds: UInt32)
    /// Each modem (by object path) with its state, the sources set up on it and whether it took the predicted
    /// orbits offered, for `io.github.whereabouts1.Manager.Providers`, e.g. `Modem/0` →
    /// `enabled; sources gps-nmea, 3gpp-lac-ci; predicted orbits injected`.
    var modemSummaries: [String: String] { get }
}

extension ModemLocationService {
    /// What every modem provider's `io.github.whereabouts1.Manager.Providers` row says: `reason` when there is one,
    /// and each modem's summary (``modemSummaries``).
    func details(reason: String?) -> [String: ProviderDetail] {
        var details: [String: ProviderDetail] = [:]
        if let reason { details["reason"] = .text(reason) }
        for (modem, summary) in modemSummaries { details["modem " + modem] = .text(summary) }
        return details
    }
}
