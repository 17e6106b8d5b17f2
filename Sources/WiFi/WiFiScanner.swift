import DBus
import Loop
import WhereaboutsCore
import WhereaboutsProviders

/// The Wi-Fi scanner the daemon uses: wpa_supplicant when it runs, else NetworkManager, else none.
///
/// It follows both services from the moment it is made (asynchronously; ``ready()`` waits for the first look)
/// and picks its backend by who is on the bus:
///
/// 1. wpa_supplicant (``WPASupplicantScanner``) when `fi.w1.wpa_supplicant1` has an owner: its levels are in
///    dBm and its ages are exact. Should it manage no interface (or refuse to be read) while NetworkManager has a
///    Wi-Fi device, as when NetworkManager drives iwd and wpa_supplicant merely runs, NetworkManager is used;
/// 2. NetworkManager (``NetworkManagerScanner``) when `org.freedesktop.NetworkManager` has an owner;
/// 3. otherwise none: ``backend`` is `none` and ``isAvailable`` false.
///
/// Neither service is ever started by the scanner (both are D-Bus activatable on Debian): only their unique names
/// are called. When owners come and go the choice is made again; a started scanner stops the old backend and
/// starts the new one with the same interval. ``onScan`` forwards the scans of the backend in use only.
@BusActor
public final class WiFiScanner: AccessPointScanner {
    /// The wpa_supplicant backend, which follows wpa_supplicant whether in use or not.
    public let wpaSupplicant: WPASupplicantScanner
    /// The NetworkManager backend, which follows NetworkManager whether in use or not.
    public let networkManager: NetworkManagerScanner

    /// The backend in use: `wpa_supplicant`, `NetworkManager`, or `none`.
    public var backend: String { current?.backend ?? "none" }
    /// True while the backend in use has at least one wireless interface.
    public var isAvailable: Bool { current?.isAvailable ?? false }
    /// Called after each scan of the backend in use, with the access points of all its interfaces.
    public var onScan: (@BusActor ([AccessPoint]) -> Void)?
    /// Called when ``isAvailable`` or ``backend`` changes.
    public var onAvailabilityChanged: (@BusActor () -> Void)?

    private enum Choice { case none, wpaSupplicant, networkManager }
    private let logger: any Logger
    private var choice = Choice.none
    /// The scan interval while started; nil while stopped.
    private var interval: Duration?
    private var isReady = false
    private var readiness: Task<Void, Never>?

    /// Starts following wpa_supplicant and NetworkManager on `connection` (asynchronously: this returns at once),
    /// reading the time from `clock` and arming timers on `timers`.
    public convenience init(
        connection: Connection, clock: any WhereaboutsCore.Clock, timers: any TimerScheduler, logger: any Logger
    ) {
        self.init(
            wpaSupplicant: WPASupplicantScanner(connection: connection, clock: clock, timers: timers, logger: logger),
            networkManager: NetworkManagerScanner(connection: connection, clock: clock, timers: timers, logger: logger),
            logger: logger)
    }

    /// Chooses between two backends made by the caller (with their own timeouts, say).
    public init(wpaSupplicant: WPASupplicantScanner, networkManager: NetworkManagerScanner, logger: any Logger) {
        self.wpaSupplicant = wpaSupplicant
        self.networkManager = networkManager
        self.logger = logger
        wpaSupplicant.onAvailabilityChanged = { [weak self] in self?.reconsider() }
        networkManager.onAvailabilityChanged = { [weak self] in self?.reconsider() }
        wpaSupplicant.onScan = { [weak self] points in
            guard let self, self.choice == .wpaSupplicant else { return }
            self.onScan?(points)
        }
        networkManager.onScan = { [weak self] points in
            guard let self, self.choice == .networkManager else { return }
            self.onScan?(points)
        }
        readiness = BusActor.task { [self] in
            await wpaSupplicant.ready()
            await networkManager.ready()
            isReady = true
            reconsider()
        }
    }

    /// Returns once both services have been looked for and the first choice is made.
    public func ready() async {
        await readiness?.value
    }

    /// Scans with the backend in use now (unless it is scanning already), then every `interval`, until
    /// ``stop()``; a second call only changes the interval. A backend chosen later starts with this interval.
    public func start(interval: Duration) {
        self.interval = interval
        current?.start(interval: interval)
    }

    /// Stops scanning; both services are still followed.
    public func stop() {
        interval = nil
        current?.stop()
    }

    private var current: (any AccessPointScanner)? { scanner(for: choice) }

    private func scanner(for choice: Choice) -> (any AccessPointScanner)? {
        switch choice {
        case .none: nil
        case .wpaSupplicant: wpaSupplicant
        case .networkManager: networkManager
        }
    }

    private func decide() -> Choice {
        if wpaSupplicant.isServiceRunning && (wpaSupplicant.isAvailable || !networkManager.isAvailable) {
            return .wpaSupplicant
        }
        if networkManager.isServiceRunning { return .networkManager }
        return .none
    }

    /// Makes the choice again, switching a started scan over, and tells ``onAvailabilityChanged``.
    private func reconsider() {
        guard isReady else { return }
        let before = (backend, isAvailable)
        let next = decide()
        if next != choice {
            if interval != nil { current?.stop() }
            choice = next
            logger.info("Wi-Fi scans now come from \(backend)")
            if let interval { current?.start(interval: interval) }
        }
        if before != (backend, isAvailable) { onAvailabilityChanged?() }
    }
}
