import Loop
import WhereaboutsCore

/// NMEA 0183 from a socket, a serial device or pty, or TCP (`[network-nmea]`), read on the bus thread without
/// blocking it.
///
/// Bytes go through one ``NMEALineSplitter`` and ``NMEAFixAssembler`` (the parser the replay source shares), so an
/// epoch's sentences become one fix, and its GSV and GSA sentences through one ``NMEASkyAssembler`` become the
/// satellites it sees; garbage, partial and over-long lines are dropped and counted, never fatal.
/// The stream is opened only while started; when it ends or fails the provider is unavailable and reopens it
/// with backoff (0.25 s doubling to 8 s, from 0.25 s again once it has opened: a ``ReconnectingLineStream``).
@BusActor
public final class NMEAStreamProvider: SkyReporting {
    public let kind = ProviderKind.nmea
    public let minimumClientLevel = AccuracyLevel.exact
    public var onFix: (@BusActor (Fix) -> Void)?
    public var onAvailabilityChanged: (@BusActor () -> Void)?
    public var onSky: (@BusActor ([Satellite]) -> Void)?

    private let endpoint: NMEAEndpoint
    private let clock: any WhereaboutsCore.Clock
    private let logger: any Logger
    private let stream: ReconnectingLineStream<NMEALineSplitter>
    private var connected: Bool?
    private var assembler = NMEAFixAssembler(provider: .nmea)
    private var skyAssembler = NMEASkyAssembler()
    private var rejectedLines = 0

    /// A provider reading `endpoint`, its fixes dated by `clock` while no RMC gives the date, its reopening timed
    /// by `timers` and its connections watched by `watches`.
    public init(
        endpoint: NMEAEndpoint, clock: any WhereaboutsCore.Clock, timers: any TimerScheduler,
        watches: any DescriptorWatcher, logger: any Logger
    ) {
        self.endpoint = endpoint
        self.clock = clock
        self.logger = logger
        stream = ReconnectingLineStream(
            opener: NMEAEndpointOpener(endpoint: endpoint), framing: NMEALineSplitter(), timers: timers,
            watches: watches)
        stream.onOpen = { [weak self] in self?.opened() }
        stream.onLine = { [weak self] line in self?.consume(line) }
        stream.onFailure = { [weak self] reason in self?.lost(reason) }
    }

    /// Exact until opening the stream has failed; then whatever the last attempt showed.
    public var availableLevel: AccuracyLevel { connected == false ? .none : .exact }

    public func start() { stream.start() }

    public func stop() { stream.stop() }

    private func opened() {
        assembler = NMEAFixAssembler(provider: .nmea)
        skyAssembler = NMEASkyAssembler()
        stream.resetBackoff()
        setConnected(true)
        logger.info("nmea: reading \(endpoint)")
    }

    private func consume(_ line: [UInt8]) {
        assembler.fallbackDate = clock.wallNow
        do {
            let sentence = try NMEASentence(parsing: line)
            if let fix = assembler.add(sentence) { onFix?(fix) }
            if let sky = skyAssembler.add(sentence) { onSky?(sky) }
        } catch {
            rejectedLines += 1
            if rejectedLines == 1 || rejectedLines.isMultiple(of: 1000) {
                logger.warning("nmea: \(endpoint): ignoring a bad sentence (\(error)); \(rejectedLines) so far")
            }
        }
    }

    private func lost(_ reason: String) {
        if connected != false { logger.warning("nmea: \(endpoint): \(reason); retrying") }
        setConnected(false)
    }

    private func setConnected(_ value: Bool) {
        let before = availableLevel
        connected = value
        if availableLevel != before { onAvailabilityChanged?() }
    }
}
