import Loop
import WhereaboutsCore

/// The modem's own satellite receiver (`[modem-gps]`), through ModemManager: the NMEA sentences of the
/// `Location` property (source `gps-nmea`) go through the project's one NMEA parser (``NMEAFixAssembler``), every
/// talker (`$GP`, `$GN`, `$GL`, `$GA`, `$GB`, ...) alike, so an epoch's GGA and RMC become one fix; its GSV and
/// GSA sentences go through an ``NMEASkyAssembler`` into the satellites the receiver sees.
///
/// **When it runs.** Only for exact clients: the receiver is set up on the modems (`Setup` with `gps-nmea`) at
/// ``start()`` and released at ``stop()``. How often the modem reports follows the smallest `TimeThreshold` of the
/// exact clients, as in GeoClue; the daemon passes it on (``ModemLocationService/setGPSRefreshRate(_:)``).
///
/// **Availability.** Exact while some enabled modem offers `gps-nmea`; otherwise none, with the reason the
/// modems give (`no-modem`, `modem-disabled`, `modem-locked`, `modem-unsupported`, `modem-unauthorised`).
///
/// **Bad input.** A sentence the parser refuses is counted and logged (the first, then every thousandth), never
/// fatal; the `Location` property repeats the latest sentences when another source changes, and a repeat is not
/// read twice.
@BusActor
public final class ModemGNSSProvider: SkyReporting {
    public let kind = ProviderKind.modemGNSS
    public let minimumClientLevel = AccuracyLevel.exact
    public var onFix: (@BusActor (Fix) -> Void)?
    public var onAvailabilityChanged: (@BusActor () -> Void)?
    public var onSky: (@BusActor ([Satellite]) -> Void)?

    private var modemSource: ModemSource
    private let clock: any WhereaboutsCore.Clock
    private let logger: any Logger
    private var started = false
    /// One assembler per modem, so that two receivers' epochs never mix.
    private var assemblers: [String: NMEAFixAssembler] = [:]
    /// The satellites each modem's receiver sees.
    private var skies: [String: NMEASkyAssembler] = [:]
    /// The NMEA text last read from each modem.
    private var lastText: [String: String] = [:]
    private var rejectedSentences: UInt32 = 0
    private var fixes: UInt32 = 0

    /// A provider reading the modems of `modems`, dating fixes by `clock` while no RMC gives the date.
    public init(modems: any ModemLocationService, clock: any WhereaboutsCore.Clock, logger: any Logger) {
        modemSource = ModemSource(.gpsNMEA, of: modems, for: .gnss, serving: .exact)
        self.clock = clock
        self.logger = logger
        modemSource.follow { [weak self] event in self?.handle(event) }
    }

    public var availableLevel: AccuracyLevel { modemSource.availableLevel }

    public var unavailabilityReason: String? { modemSource.unavailability }

    public var details: [String: ProviderDetail] {
        modemSource.details(reason: unavailabilityReason).merging([
            "fixes": .count(fixes), "rejected-sentences": .count(rejectedSentences),
        ]) { $1 }
    }

    public func start() {
        started = true
        modemSource.need()
    }

    public func stop() {
        started = false
        modemSource.release()
        assemblers = [:]
        skies = [:]
        lastText = [:]
    }

    private func handle(_ event: ModemLocationEvent) {
        switch event {
        case .availabilityChanged:
            if modemSource.levelChanged(to: availableLevel) { onAvailabilityChanged?() }
        case .location(.nmea(let text, let modem)):
            read(text, from: modem)
        case .location, .locationGone:
            return
        }
    }

    /// Reads the sentences of one `Location` update, CR LF (or LF) separated, in order.
    private func read(_ text: String, from modem: String) {
        guard started, lastText[modem] != text else { return }
        lastText[modem] = text
        var assembler = assemblers[modem] ?? NMEAFixAssembler(provider: .modemGNSS)
        var sky = skies[modem] ?? NMEASkyAssembler()
        assembler.fallbackDate = clock.wallNow
        for line in text.utf8.split(whereSeparator: { $0 == 0x0D || $0 == 0x0A }) {
            do {
                let sentence = try NMEASentence(parsing: line)
                if var fix = assembler.add(sentence) {
                    fix.description = "Modem GNSS"
                    fixes &+= 1
                    onFix?(fix)
                }
                if let satellites = sky.add(sentence) { onSky?(satellites) }
            } catch {
                rejectedSentences &+= 1
                if rejectedSentences == 1 || rejectedSentences.isMultiple(of: 1000) {
                    logger.warning(
                        "modem GNSS: \(modem): ignoring a bad sentence (\(error)); \(rejectedSentences) so far")
                }
            }
        }
        assemblers[modem] = assembler
        skies[modem] = sky
    }
}
