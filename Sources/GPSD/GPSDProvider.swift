import CGPSD
import Loop
import Synchronization
import WhereaboutsCore
import WhereaboutsProviders

#if canImport(Glibc)
    import Glibc
#endif

/// Fixes from gpsd through libgps (`[gpsd]`): watched only while started, reconnecting with backoff.
///
/// libgps is loaded at the first connection (the shim's `dlopen`), so a daemon whose clients never need gpsd
/// never maps it; a libgps that cannot be loaded fails the connection with the loader's reason, retried as any
/// other failure. libgps blocks, so each watch runs on a thread of its own and hands fixes to the bus thread.
/// When gpsd goes away the provider becomes unavailable at once and keeps trying to reconnect (0.25 s doubling to
/// 8 s); fixes resume when gpsd returns. On connecting it asks gpsd for its latest fix (`?POLL;`), so a client
/// that starts while gpsd already has a fix gets it at once rather than at the next report.
///
/// gpsd answers `?POLL` with what it holds of the current epoch, which mid-epoch is only part of it (say the
/// position and time of a GGA, before the RMC with the course). That is still one epoch's data, and the epoch's
/// own report follows with the same fix time: the service then refreshes the Location it signalled for that
/// epoch in place rather than signalling the epoch again. A report identical to the one before is not passed on.
@BusActor
public final class GPSDProvider: LocationProvider {
    public let kind = ProviderKind.gpsd
    public let minimumClientLevel = AccuracyLevel.exact
    public var onFix: (@BusActor (Fix) -> Void)?
    public var onAvailabilityChanged: (@BusActor () -> Void)?

    private let host: String
    private let port: String
    private let logger: any Logger
    private var session: GPSDSession?
    private var connected: Bool?

    public init(host: String, port: UInt16, logger: any Logger) {
        self.host = host
        self.port = String(port)
        self.logger = logger
    }

    /// Exact until a connection attempt has failed; then whatever the last attempt showed.
    public var availableLevel: AccuracyLevel { connected == false ? .none : .exact }

    public func start() {
        guard session == nil else { return }
        let session = GPSDSession(host: host, port: port)
        self.session = session
        session.run { [weak self] event in
            guard let self, self.session === session else { return }
            self.handle(event)
        }
    }

    public func stop() {
        session?.cancel()
        session = nil
    }

    private func handle(_ event: GPSDSession.Event) {
        switch event {
        case .fix(let fix):
            onFix?(fix)
        case .connected:
            logger.info("gpsd: connected to \(host):\(port)")
            setConnected(true)
        case .disconnected(let reason):
            if connected != false { logger.warning("gpsd: \(host):\(port): \(reason); reconnecting") }
            setConnected(false)
        }
    }

    private func setConnected(_ value: Bool) {
        let before = availableLevel
        connected = value
        if availableLevel != before { onAvailabilityChanged?() }
    }
}

/// One watch of gpsd on its own thread, until cancelled.
final class GPSDSession: @unchecked Sendable {
    enum Event: Sendable {
        case connected
        case disconnected(String)
        case fix(Fix)
    }

    private let host: String
    private let port: String
    private let cancelled = Atomic(false)
    private var deliver: (@BusActor @Sendable (Event) -> Void)?

    init(host: String, port: String) {
        self.host = host
        self.port = port
    }

    /// Starts the thread; `deliver` runs on the bus thread for each event.
    func run(_ deliver: @escaping @BusActor @Sendable (Event) -> Void) {
        self.deliver = deliver
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(
            &thread, nil,
            { context in
                let session = Unmanaged<GPSDSession>.fromOpaque(context!).takeRetainedValue()
                session.loop()
                return nil
            }, context)
        if created == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<GPSDSession>.fromOpaque(context).release()
            post(.disconnected("cannot start a thread (error \(created))"))
        }
    }

    /// Asks the thread to close the connection and end; it does within a fifth of a second.
    func cancel() { cancelled.store(true, ordering: .relaxed) }

    private var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    private func post(_ event: Event) {
        guard let deliver else { return }
        EventLoop.main.execute { deliver(event) }
    }

    private func loop() {
        var backoff = 0.25
        while !isCancelled {
            var message: UnsafePointer<CChar>? = nil
            guard let gps = wb_gps_open(host, port, &message) else {
                post(.disconnected(message.map { String(cString: $0) } ?? "cannot connect"))
                sleep(seconds: backoff)
                backoff = min(backoff * 2, 8)
                continue
            }
            let (reason, sawFix) = watch(gps)
            wb_gps_close(gps)
            guard let reason else { return }
            post(.disconnected(reason))
            // A gpsd that hangs up before giving a fix is retried with growing pauses, like a refused one.
            if sawFix { backoff = 0.25 }
            sleep(seconds: backoff)
            backoff = min(backoff * 2, 8)
        }
    }

    /// Streams reports until cancelled (nil reason) or the connection fails (the reason); says whether any fix
    /// came.
    private func watch(_ gps: OpaquePointer) -> (reason: String?, sawFix: Bool) {
        guard wb_gps_watch(gps, 1) == 0, wb_gps_poll(gps) == 0 else { return ("cannot start watching", false) }
        var raw = wb_gps_fix()
        var sawFix = false
        var heard = false
        var previous: Fix?
        while !isCancelled {
            switch wb_gps_wait(gps, 200_000) {
            case 0: continue
            case 1: break
            default: return ("connection failed", sawFix)
            }
            let result = wb_gps_read(gps, &raw)
            if result >= 0 && !heard {
                // Up only once gpsd has spoken: a gpsd going down accepts and closes connections for a moment.
                heard = true
                post(.connected)
            }
            switch result {
            case -1: return ("connection closed", sawFix)
            case 1:
                if let fix = GPSDFix.fix(from: raw, receivedAt: WallTime(microseconds: wallMicroseconds())) {
                    sawFix = true
                    // The answer to ?POLL repeats the latest report when gpsd was between epochs.
                    if fix != previous { post(.fix(fix)) }
                    previous = fix
                }
            default: continue
            }
        }
        return (nil, sawFix)
    }

    private func sleep(seconds: Double) {
        var remaining = seconds
        while remaining > 0 && !isCancelled {
            usleep(50_000)
            remaining -= 0.05
        }
    }
}
