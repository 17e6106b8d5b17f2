import Loop
import LoopScheduling
import WhereaboutsCore

/// The static location from a file in GeoClue 2.7's `/etc/geolocation` format (`[static-source]`), or the one an
/// administrator set through the bus, which takes its place while it is set.
///
/// The file is read when the provider is made and re-read whenever it changes; a malformed or missing file is
/// logged and leaves the provider unavailable (no location), never stopping the service. Each start re-emits the
/// location with a fresh timestamp, as GeoClue does.
@BusActor
public final class StaticProvider: LocationProvider {
    public let kind = ProviderKind.static
    public let minimumClientLevel = AccuracyLevel.country
    public var onFix: (@BusActor (Fix) -> Void)?
    public var onAvailabilityChanged: (@BusActor () -> Void)?

    private let path: String?
    private let clock: any WhereaboutsCore.Clock
    private let timers: any TimerScheduler
    private let watches: any DescriptorWatcher
    private let logger: any Logger
    private var fileLocation: StaticLocation?
    private var setLocation: StaticLocation?
    private var location: StaticLocation? { setLocation ?? fileLocation }
    private var started = false
    private var watcher: FileWatcher?
    private var pendingReload: ScheduledTimer?

    /// A provider reading `path`, or, without one, serving only a location set with ``setLocation(_:)``; the file's
    /// folder is watched for changes by `watches`.
    public init(
        path: String?, clock: any WhereaboutsCore.Clock, timers: any TimerScheduler, watches: any DescriptorWatcher,
        logger: any Logger
    ) {
        self.path = path
        self.clock = clock
        self.timers = timers
        self.watches = watches
        self.logger = logger
        guard let path else { return }
        fileLocation = load(path)
        watcher = FileWatcher(path: path, watches: watches) { [weak self] in self?.scheduleReload() }
        if watcher == nil { logger.warning("static source: cannot watch \(path) for changes") }
    }

    /// Serves `location` in the place of the file's, or the file's again when nil.
    public func setLocation(_ location: StaticLocation?) {
        change { setLocation = location }
    }

    public var availableLevel: AccuracyLevel { location == nil ? .none : .exact }

    public func start() {
        started = true
        emit()
    }

    public func stop() { started = false }

    private func load(_ path: String) -> StaticLocation? {
        do {
            let location = try StaticLocationFile.parse(try readTextFile(path, limit: 1 << 20), file: path)
            logger.info(
                "static source: \(location.latitude), \(location.longitude) ± \(location.accuracy) m from \(path)")
            return location
        } catch let error as FileReadError {
            logger.warning("static source: cannot read \(error); no static location")
        } catch {
            logger.warning("static source: \(error); no static location")
        }
        return nil
    }

    /// Editors write in several steps; wait for them to settle before reading.
    private func scheduleReload() {
        if let pendingReload { timers.cancelTimer(pendingReload) }
        pendingReload = timers.scheduleOnBus(after: .milliseconds(100)) { [weak self] in
            guard let self, let path = self.path else { return }
            self.pendingReload = nil
            self.change { self.fileLocation = self.load(path) }
        }
    }

    /// Applies `update`, telling the set when availability changed and clients when the location did.
    private func change(_ update: () -> Void) {
        let before = location
        update()
        guard location != before else { return }
        if (before == nil) != (location == nil) { onAvailabilityChanged?() }
        emit()
    }

    private func emit() {
        guard started, let location else { return }
        onFix?(location.fix(at: clock.wallNow))
    }
}
