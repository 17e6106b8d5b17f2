import Loop
import WhereaboutsCore

/// Fixes from gpsd (`[gpsd]`): watched only while started, reconnecting with backoff; the satellites of its SKY
/// reports as the receiver's sky.
///
/// The daemon reaches gpsd through libgps (the GPSD module's `LibGPSClient`, a ``GPSDClient``), loaded at the first
/// connection (the shim's `dlopen`), so a daemon whose clients never need gpsd never maps it; a libgps that cannot
/// be loaded fails the connection with the loader's reason, retried as any other failure. libgps only connects, on a
/// short-lived thread since that blocks, and sends the commands; gpsd's socket is then read on the bus thread
/// whenever the event loop finds it readable, through a ``ReconnectingLineStream``. When gpsd goes away the provider becomes unavailable at once and keeps trying to
/// reconnect (0.25 s doubling to 8 s, from 0.25 s again once a connection has given a fix); fixes resume when
/// gpsd returns. On connecting it asks gpsd for its latest fix (`?POLL;`), so a client that starts while gpsd
/// already has a fix gets it at once rather than at the next report.
///
/// gpsd answers `?POLL` with what it holds of the current epoch, which mid-epoch is only part of it (say the
/// position and time of a GGA, before the RMC with the course). That is still one epoch's data, and the epoch's
/// own report follows with the same fix time: the service then refreshes the Location it signalled for that
/// epoch in place rather than signalling the epoch again. A report identical to the one before is not passed on.
@BusActor
public final class GPSDProvider: SkyReporting {
    public let kind = ProviderKind.gpsd
    public let minimumClientLevel = AccuracyLevel.exact
    public var onFix: (@BusActor (Fix) -> Void)?
    public var onAvailabilityChanged: (@BusActor () -> Void)?
    public var onSky: (@BusActor ([Satellite]) -> Void)?

    private let address: String
    private let clock: any WhereaboutsCore.Clock
    private let logger: any Logger
    private let stream: ReconnectingLineStream<GPSDReportSplitter>
    private let client: any GPSDClient
    private var reports: any GPSDReportDecoding
    private var heard = false
    private var connected: Bool?

    /// A provider watching gpsd at `host`:`port` through `client`, stamping reports without a time with `clock`'s,
    /// its reconnecting timed by `timers` and its connections watched by `watches`.
    public init(
        host: String, port: UInt16, client: any GPSDClient, clock: any WhereaboutsCore.Clock,
        timers: any TimerScheduler, watches: any DescriptorWatcher, logger: any Logger
    ) {
        address = "\(host):\(port)"
        self.client = client
        self.clock = clock
        self.logger = logger
        reports = client.reportReader()
        stream = ReconnectingLineStream(
            opener: client.opener(host: host, port: port), framing: GPSDReportSplitter(), timers: timers,
            watches: watches)
        stream.onOpen = { [weak self] in self?.opened() }
        stream.onLine = { [weak self] line in self?.read(line) }
        stream.onFailure = { [weak self] reason in self?.lost(reason) }
    }

    /// Exact until a connection attempt has failed; then whatever the last attempt showed.
    public var availableLevel: AccuracyLevel { connected == false ? .none : .exact }

    public func start() { stream.start() }

    public func stop() { stream.stop() }

    private func opened() {
        reports = client.reportReader()
        heard = false
    }

    private func read(_ line: [UInt8]) {
        if !heard {
            // Up only once gpsd has spoken: a gpsd going down accepts and closes connections for a moment.
            heard = true
            logger.info("gpsd: connected to \(address)")
            setConnected(true)
        }
        let fix = reports.fix(from: line, receivedAt: clock.wallNow)
        if let sky = reports.takeSky() { onSky?(sky) }
        guard let fix else { return }
        // A gpsd that hangs up before giving a fix is retried with growing pauses, like a refused one.
        stream.resetBackoff()
        onFix?(fix)
    }

    private func lost(_ reason: String) {
        if connected != false { logger.warning("gpsd: \(address): \(reason); reconnecting") }
        setConnected(false)
    }

    private func setConnected(_ value: Bool) {
        let before = availableLevel
        connected = value
        if availableLevel != before { onAvailabilityChanged?() }
    }
}
