import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport

/// `wbbench --modem`: the modem path, whereaboutsd as users install it and GeoClue 2.6 with its modem GPS source.
/// The headline runs through the real ModemManager (``RealModemBench``); this part, shown beside it and named as
/// such, runs each service on a private bus of its own with a ModemManager stand-in of its own holding one
/// registered modem with a GPS, whose epochs the bench pushes ten times a second: without ModemManager's own
/// reading of the serial port, it shows the services' share alone. Each service's app (`Tests/Clients/location_client.py`, one bus connection) sees both the stand-in's
/// `PropertiesChanged` for `Location` (the moment ModemManager publishes the sentences) and the service's
/// `LocationUpdated` on that connection and one clock: the time between them is the service's share, the bus's
/// hops included (for GeoClue also its `GetLocation` call back to ModemManager, which libmm-glib makes on every
/// change).
enum ModemBench {
    /// The desktop id of the bench's app, which both services let locate.
    static let app = "wbbench"
    /// The app.
    static let client = ProjectPaths.clients.appendingPathComponent("location_client.py")
    /// The published epochs left out at the start, while the service warms up.
    static let warmUp = 5

    /// One service's figures.
    struct Latencies {
        /// Milliseconds from each published epoch to the app's next `LocationUpdated`.
        var milliseconds: [Double] = []
        /// Published epochs with no `LocationUpdated` before the next one.
        var unmatched = 0
        /// How many times polkitd ran the bench's grant rule (none for GeoClue, which asks its agent).
        var polkitChecks = 0
    }

    /// One epoch's GGA, GSA and RMC (GP talker, which GeoClue 2.6 requires) at `time` without their line ends,
    /// moving a little each time.
    static func sentences(_ index: Int, at time: Double) -> [String] {
        NMEAEpoch(time: time, latitude: 48.1 + Double(index % 1000) * 0.00001, longitude: 11.5).sentences.map {
            $0.trimmingCharacters(in: .newlines)
        }
    }

    /// whereaboutsd as packaged: polkitd with the package's policy and rules plus the bench's grant
    /// (``InstalledAuthorisation``), the daemon with `[modem-gps]` on asking it, the app run as `nobody`.
    @concurrent static func measureWhereabouts(_ options: Options) async throws -> Latencies {
        let authorisation = try InstalledAuthorisation(app: app, extraPolicy: ModemManagerMock.busPolicy)
        defer { authorisation.stop() }
        let modemManager = try ModemManagerMock(bus: authorisation.bus)
        defer { modemManager.stop() }
        let modem = try modemManager.addModem(capabilities: [.gpsNMEA], state: .registered)
        let daemon = try DaemonHarness(config: "[modem-gps]\nenable=true\n", polkit: true, bus: authorisation.bus)
        try daemon.startDaemon()
        defer { daemon.stop() }
        var latencies = try await measure(
            on: authorisation.bus, modemManager, modem, asUser: InstalledAuthorisation.user, options)
        latencies.polkitChecks = authorisation.checks
        return latencies
    }

    /// GeoClue 2.6 with only `[modem-gps]` on, the app allowed as a system component and run as root with an agent
    /// registered, as GeoClue needs before it answers `GetClient`.
    @BusActor
    static func measureGeoClue(_ options: Options) async throws -> Latencies {
        let rig = try await GeoClueModemRig(app: app)
        defer { rig.stop() }
        let latencies = try await measure(on: rig.bus, rig.modemManager, rig.modem, asUser: nil, options)
        if latencies.milliseconds.isEmpty {
            let setups = try rig.modemManager.setupCalls(rig.modem)
            throw TestEnvironmentError(
                "GeoClue sent no LocationUpdated; Setup calls at the stand-in: \(setups)\n\(rig.geoClue.log)")
        }
        return latencies
    }

    /// Starts the app as `user` (nil: root), publishes epochs from `modem` until the app had a `LocationUpdated`
    /// for ``warmUp`` plus `options.reports` of them (or four times as many were published), and pairs each
    /// published epoch after the warm-up with the app's first `LocationUpdated` before the next.
    @concurrent static func measure(
        on bus: PrivateBus, _ modemManager: ModemManagerMock, _ modem: String, asUser user: String?,
        _ options: Options
    ) async throws -> Latencies {
        let app = try Unprivileged.spawn(
            [WPASupplicantMock.python.path, client.path, bus.address, Self.app, "modem", modem], asUser: user,
            environment: bus.environment, in: bus.directory)
        defer { app.stop() }
        try Wait.until("the app as \(user ?? "root") to start", timeout: 20) {
            let log = app.log
            if log.contains("refused") || !app.isRunning {
                throw TestEnvironmentError("the app as \(user ?? "root") failed:\n\(log)")
            }
            return log.contains("started")
        }
        let wanted = warmUp + options.reports
        var index = 0
        while stamps(app.log, "fix").count < wanted, index < wanted * 4 {
            try modemManager.pushNMEA(modem, sentences(index, at: NMEA.wallNow()))
            index += 1
            await pause(options.interval)
        }
        await pause(500)
        let log = app.log
        let published = stamps(log, "modem")
        let fixes = stamps(log, "fix")
        var latencies = Latencies()
        for (offset, start) in published.enumerated().dropFirst(warmUp) {
            let end = offset + 1 < published.count ? published[offset + 1] : Int64.max
            guard let arrival = fixes.first(where: { $0 >= start && $0 < end }) else {
                latencies.unmatched += 1
                continue
            }
            latencies.milliseconds.append(ms(arrival - start))
        }
        return latencies
    }

    /// The monotonic times of the app's lines `KIND T`, in order.
    static func stamps(_ log: String, _ kind: String) -> [Int64] {
        log.split(separator: "\n").compactMap { line in
            line.hasPrefix("\(kind) ") ? Int64(line.dropFirst(kind.count + 1)) : nil
        }
    }

    @BusActor
    static func run(_ options: Options) async throws {
        print(
            "wbbench --modem: whereaboutsd \(try ProjectPaths.product("whereaboutsd").path), GeoClue "
                + "\(GeoClueHarness.executable.path) \(Machine.packageVersion("geoclue-2.0")) (libmm-glib0 "
                + "\(Machine.packageVersion("libmm-glib0"))), polkitd \(Machine.packageVersion("polkitd")); "
                + "\(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(Machine.loadAverage())")
        print(
            "through the real ModemManager: each service on a private bus of its own with Debian's ModemManager "
                + "\(Machine.packageVersion("modemmanager")) and the emulated Quectel EG25 (Tests/StandIns/"
                + "emulated_modem.py under umockdev), its receiver streaming GGA and RMC ($GP) once a second; "
                + "whereaboutsd's ModemManager asks the real polkitd, GeoClue's a polkit stand-in")
        let realOurs = try await RealModemBench.measureWhereabouts(epochs: options.epochs)
        let realGeoClue = try await RealModemBench.measureGeoClue(epochs: options.epochs)
        RealModemBench.report(whereabouts: realOurs, geoClue: realGeoClue, epochs: options.epochs)
        print(
            "\nthrough the stand-in: each service on a private bus of its own with the ModemManager stand-in (Tests/StandIns/"
                + "modemmanager_mock.py, ModemManager 1.20's API) and one registered modem with a GPS, its NMEA source "
                + "published for every epoch; one app per service on one connection (python-dbus, "
                + "Tests/Clients/location_client.py), timing on its own clock the stand-in's PropertiesChanged for "
                + "Location and the service's LocationUpdated")
        print(
            "whereaboutsd as installed: polkitd with polkit/io.github.whereabouts1.policy and the package's rules, "
                + "plus /etc/polkit-1/rules.d/\(InstalledAuthorisation.grantRuleFile(for: app)) (YES to "
                + "location-always for \(app) run by \(InstalledAuthorisation.user)); [authorisation] polkit=true; a "
                + "logind stand-in (no process in a session); the app as \(InstalledAuthorisation.user)")
        print(
            "GeoClue 2.6: [modem-gps] enable=true, every other source off (its city-level GeoIP lookup, which 2.6 "
                + "makes even so, fails without DNS), \(app) allowed as a system component; the app as root with an "
                + "agent registered")
        let ours = try await measureWhereabouts(options)
        let geoClue = try await measureGeoClue(options)
        print(
            "\nThe stand-in, \(options.reports) epochs, each \(options.interval) ms after the last was pushed "
                + "(the stand-in's PropertiesChanged for Location → the service's LocationUpdated, at the app)")
        print(
            "   whereaboutsd (as installed): \(summary(ours.milliseconds)); polkitd ran the grant rule "
                + "\(ours.polkitChecks) times")
        print("   GeoClue 2.6 (modem-gps):     \(summary(geoClue.milliseconds))")
        for (name, latencies) in [("whereaboutsd", ours), ("GeoClue", geoClue)] where latencies.unmatched > 0 {
            print("   \(name): \(latencies.unmatched) published epochs without a LocationUpdated")
        }
        print("   GeoClue / whereaboutsd: \(ratios(geoClue.milliseconds, ours.milliseconds))")
    }

    /// The ratios of `numerator`'s p50, p90, p99 and max to `denominator`'s.
    static func ratios(_ numerator: [Double], _ denominator: [Double]) -> String {
        [50.0, 90, 99, 100].map { percentile in
            guard let top = Percentile.of(numerator, percentile), let bottom = Percentile.of(denominator, percentile),
                bottom > 0
            else { return "?" }
            return (percentile == 100 ? "max " : "p\(Int(percentile)) ") + String(format: "%.1f×", top / bottom)
        }.joined(separator: ", ")
    }
}
