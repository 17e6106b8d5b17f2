import Loop
import WhereaboutsCore

/// What each modem provider does with its one source of the modems' location: follows the modems, needs the
/// source while it runs (the modems are set up with it) and not otherwise, serves its level while some modem
/// offers the source, and says when that level changed, once per change.
@BusActor
struct ModemSource {
    private let modems: any ModemLocationService
    private let source: ModemLocationSources
    private let consumer: ModemLocationConsumer
    /// The level the provider serves while some modem offers the source.
    private let level: AccuracyLevel
    /// The provider's level when it last told of a change.
    private var toldLevel: AccuracyLevel

    /// `source` of `modems`, needed by `consumer`, which serves `level` while some modem offers it.
    init(
        _ source: ModemLocationSources, of modems: any ModemLocationService, for consumer: ModemLocationConsumer,
        serving level: AccuracyLevel
    ) {
        self.modems = modems
        self.source = source
        self.consumer = consumer
        self.level = level
        toldLevel = modems.unavailability(of: source) == nil ? level : .none
    }

    /// Nil while some modem offers the source; otherwise why not, as an `AvailabilityChanged` reason word.
    var unavailability: String? { modems.unavailability(of: source) }

    /// The provider's level while some modem offers the source; `.none` otherwise.
    var availableLevel: AccuracyLevel { unavailability == nil ? level : .none }

    /// Calls `observer` with every event of the modems from now on.
    func follow(_ observer: @escaping @BusActor (ModemLocationEvent) -> Void) { modems.observe(observer) }

    /// For the provider's start: the modems are set up with the source.
    func need() { modems.setNeeded(source, by: consumer) }

    /// For the provider's stop: the source is released unless another provider needs it.
    func release() { modems.setNeeded([], by: consumer) }

    /// Whether the provider's level `now` differs from the one it last told of; true means it tells of this one.
    mutating func levelChanged(to now: AccuracyLevel) -> Bool {
        guard now != toldLevel else { return false }
        toldLevel = now
        return true
    }

    /// The provider's `io.github.whereabouts1.Manager.Providers` row: `reason` when there is one, and the modems.
    func details(reason: String?) -> [String: ProviderDetail] { modems.details(reason: reason) }
}
