import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport

/// `wbbench --modem`: the modem path, whereaboutsd and GeoClue 2.6 as their packages install them, each against
/// Debian's own ModemManager 1.20 driving the project's emulated Quectel EG25 (``RealModemManager``), whose receiver
/// streams GGA and RMC with `$GP` talkers (the only ones GeoClue 2.6 reads) while ModemManager has it on: first an
/// epoch a second, as receivers give them, then an epoch every `--interval` milliseconds.
///
/// Each service runs as its package's user with a real polkitd on its bus holding ModemManager's actions and the
/// package's rule granting them to that user, so ModemManager's polkit checks (on `Setup`, `SetGpsRefreshRate` and
/// `GetLocation`) take the path they take on an installed system. Each service's app
/// (`Tests/Clients/location_client.py`, one bus connection) sees ModemManager's `PropertiesChanged` for `Location`
/// (with the refresh rate at 0, as it reads the sentences; the app notes the GGA's time, which names the epoch) and
/// the service's `LocationUpdated` on one connection and one clock. Each epoch's first `LocationUpdated` is timed
/// from ModemManager's latest `Location` update before it, the one that gave the service what it needed, and an
/// epoch without one before the next epoch's first update is counted as missed.
enum ModemBench {
    /// The desktop id of the bench's app, which both services let locate.
    static let app = "wbbench"
    /// The app.
    static let client = ProjectPaths.clients.appendingPathComponent("location_client.py")
    /// Epochs left out at the start of each rate, while the service warms up.
    static let warmUp = 3
    /// The user the Debian package runs whereaboutsd as.
    static let whereaboutsUser = "whereabouts"
    /// The user Debian's `geoclue-2.0` runs GeoClue as.
    static let geoClueUser = "geoclue"
    /// Debian's `geoclue-2.0` rule granting ModemManager's `Device.Control` and `Location` to ``geoClueUser``.
    static let geoClueRules = URL(fileURLWithPath: "/usr/share/polkit-1/rules.d/org.freedesktop.GeoClue2.rules")
    /// Debian's `geoclue-2.0` bus policy, which lets ``geoClueUser`` own `org.freedesktop.GeoClue2` and call the
    /// agents.
    static let geoClueBusPolicy = ["org.freedesktop.GeoClue2.conf", "org.freedesktop.GeoClue2.Agent.conf"].map {
        "<include>/etc/dbus-1/system.d/\($0)</include>"
    }.joined(separator: "\n")

    /// One service's figures at one rate.
    struct Latencies {
        /// The milliseconds between epochs.
        var interval: Int
        /// Milliseconds from ModemManager's latest `Location` update before each epoch's first `LocationUpdated`
        /// to that `LocationUpdated`.
        var milliseconds: [Double] = []
        /// Epochs with no `LocationUpdated` before the next epoch's first `Location` update.
        var missed = 0
        /// `LocationUpdated` signals beyond the first in an epoch.
        var extra = 0
        /// `Location` updates per epoch, the most often seen count.
        var updatesPerEpoch = 0
        /// Seconds from the app's start to its first `LocationUpdated`.
        var firstFix: Double?
    }

    /// One service's figures: one ``Latencies`` per rate, and the refresh rate ModemManager ended with, as the
    /// service set it.
    struct Figures {
        var rates: [Latencies] = []
        var refreshRate: UInt32?
        /// How many times polkitd ran the bench's grant rule for the app (whereaboutsd only: GeoClue asks its agent).
        var polkitChecks: Int?
    }

    /// whereaboutsd as installed: the packaged build with `[modem-gps]` on and `[authorisation] polkit=true`, run
    /// as ``whereaboutsUser``; polkitd with the package's policy and rules (its grant of ModemManager's
    /// `Device.Control` to that user among them) plus the bench's grant (``InstalledAuthorisation``), which
    /// ModemManager asks too; the app as `nobody`.
    @concurrent static func measureWhereabouts(_ options: Options) async throws -> Figures {
        let authorisation = try InstalledAuthorisation(
            app: app, extraPolicy: try RealModemManager.busPolicy(polkitStandIn: false), modemManager: true)
        defer { authorisation.stop() }
        let modemManager = try RealModemManager(bus: authorisation.bus, polkitStandIn: false)
        defer { modemManager.stop() }
        try modemManager.setNMEA(true, talker: "GP")
        let daemon = try DaemonHarness(
            config: "[modem-gps]\nenable=true\n\n[authorisation]\npolkit=true\ngrants=@DIR@/state/grants\n",
            bus: authorisation.bus)
        defer { daemon.stop() }
        let state = daemon.file("state")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: false)
        guard let user = getpwnam(whereaboutsUser), chown(state.path, user.pointee.pw_uid, user.pointee.pw_gid) == 0
        else { throw TestEnvironmentError("cannot hand \(state.path) to \(whereaboutsUser): is the user there?") }
        try daemon.startDaemon(launcher: [
            try Executables.find("setpriv").path, "--reuid=\(whereaboutsUser)", "--regid=\(whereaboutsUser)",
            "--clear-groups",
        ])
        do {
            var figures = try await measure(
                on: authorisation.bus, modemManager, asUser: InstalledAuthorisation.user, options)
            figures.polkitChecks = authorisation.checks
            return figures
        } catch {
            throw TestEnvironmentError("\(error)\nwhereaboutsd:\n\(daemon.daemonLog.suffix(4000))")
        }
    }

    /// GeoClue 2.6 as installed: only its modem GPS source on, reaching ModemManager through libmm-glib, run as
    /// ``geoClueUser``; polkitd with ModemManager's actions and the package's rule (``geoClueRules``), which
    /// ModemManager asks; the app as root with an agent registered, as GeoClue needs before it answers `GetClient`.
    @BusActor
    static func measureGeoClue(_ options: Options) async throws -> Figures {
        let bus = try PolkitHarness.makeBus(
            extraPolicy: try RealModemManager.busPolicy(polkitStandIn: false) + "\n" + geoClueBusPolicy)
        defer { bus.stop() }
        let polkit = try PolkitHarness(
            bus: bus, rules: [geoClueRules.lastPathComponent: try String(contentsOf: geoClueRules, encoding: .utf8)],
            extraPolicies: [
                InstalledAuthorisation.modemManagerActions.lastPathComponent: try String(
                    contentsOf: InstalledAuthorisation.modemManagerActions, encoding: .utf8)
            ])
        defer { polkit.stop() }
        let modemManager = try await onOwnThread { try RealModemManager(bus: bus, polkitStandIn: false) }
        defer { modemManager.stop() }
        try modemManager.setNMEA(true, talker: "GP")
        let geoClue = try GeoClueHarness(
            config: GeoClueHarness.configuration(apps: [app: true], source: .modemGPS), bus: bus)
        try geoClue.start(asUser: geoClueUser)
        defer { geoClue.stop() }
        let agent = try await GeoClueTestAgent.registered(on: bus, as: GeoClueHarness.agentId)
        defer { agent.close() }
        do {
            return try await measure(on: bus, modemManager, asUser: nil, options)
        } catch {
            throw TestEnvironmentError("\(error)\nGeoClue:\n\(geoClue.log.suffix(4000))")
        }
    }

    /// Measures at an epoch a second, then at an epoch every `options.interval` milliseconds, with a new app each
    /// time (run as `user`, nil for root); ends with ModemManager's refresh rate as the service left it.
    @concurrent static func measure(
        on bus: PrivateBus, _ modemManager: RealModemManager, asUser user: String?, _ options: Options
    ) async throws -> Figures {
        var figures = Figures()
        for interval in [1000, options.interval] {
            try modemManager.setEpochInterval(milliseconds: interval)
            figures.rates.append(
                try await measure(
                    on: bus, modemManager, asUser: user, interval: interval, epochs: options.reports))
        }
        figures.refreshRate = try? modemManager.gpsRefreshRate()
        return figures
    }

    /// Starts the app as `user` (nil: root) and waits until it has seen ``warmUp`` plus `epochs` epochs and the
    /// start of one more, then times each epoch after the warm-up.
    @concurrent static func measure(
        on bus: PrivateBus, _ modemManager: RealModemManager, asUser user: String?, interval: Int, epochs: Int
    ) async throws -> Latencies {
        let started = ContinuousClock.now
        let app = try Unprivileged.spawn(
            [WPASupplicantMock.python.path, client.path, bus.address, Self.app, "modem", modemManager.modemPath],
            asUser: user, environment: bus.environment, in: bus.directory)
        defer { app.stop() }
        let wanted = warmUp + epochs + 1
        var latencies = Latencies(interval: interval)
        let deadline = ContinuousClock.now + .milliseconds(2 * wanted * interval) + .seconds(60)
        while true {
            let log = app.log
            if log.contains("refused") || !app.isRunning {
                throw TestEnvironmentError("the app as \(user ?? "root") failed:\n\(log)")
            }
            if latencies.firstFix == nil, !stamps(log, "fix").isEmpty {
                latencies.firstFix = (ContinuousClock.now - started).seconds
            }
            // Epochs count once the service has given its first fix, so that the warm-up is the service's own.
            let fixes = stamps(log, "fix")
            let seen = receiverEpochs(log).filter { $0[0] >= (fixes.first ?? .max) }
            if seen.count >= wanted { break }
            guard ContinuousClock.now < deadline else {
                throw TestEnvironmentError(
                    "\(seen.count) of \(wanted) epochs in time, \(fixes.count) fixes:\n\(log.suffix(4000))\n"
                        + modemManager.log)
            }
            await pause(min(interval, 100))
        }
        let log = app.log
        let fixes = stamps(log, "fix")
        let epochList = receiverEpochs(log).drop { $0[0] < fixes[0] }
        var counts: [Int: Int] = [:]
        for (offset, epoch) in epochList.enumerated().dropFirst(warmUp).prefix(epochs) {
            counts[epoch.count, default: 0] += 1
            let next = epochList[epochList.startIndex + offset + 1][0]
            let inEpoch = fixes.filter { $0 >= epoch[0] && $0 < next }
            guard let fix = inEpoch.first else {
                latencies.missed += 1
                continue
            }
            latencies.extra += inEpoch.count - 1
            let update = epoch.last { $0 <= fix } ?? epoch[0]
            latencies.milliseconds.append(ms(fix - update))
        }
        latencies.updatesPerEpoch = counts.max { $0.value < $1.value }?.key ?? 0
        return latencies
    }

    /// The arrival times of ModemManager's `Location` updates (the app's lines `modem T E`) in the receiver's
    /// epochs, in order: consecutive updates whose GGA has the same time `E` form one epoch; updates without a GGA
    /// are left out.
    static func receiverEpochs(_ log: String) -> [[Int64]] {
        var epochs: [(time: Substring, updates: [Int64])] = []
        for line in log.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count == 3, words[0] == "modem", words[2] != "-", let arrival = Int64(words[1]) else {
                continue
            }
            if epochs.last?.time == words[2] {
                epochs[epochs.count - 1].updates.append(arrival)
            } else {
                epochs.append((words[2], [arrival]))
            }
        }
        return epochs.map(\.updates)
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
                + "\(Machine.packageVersion("libmm-glib0"))), ModemManager \(Machine.packageVersion("modemmanager")), "
                + "polkitd \(Machine.packageVersion("polkitd")); \(ProcessInfo.processInfo.activeProcessorCount) "
                + "cores, load average \(Machine.loadAverage())")
        print(
            "each service on a private bus of its own with Debian's ModemManager (/usr/sbin/ModemManager, "
                + "unmodified) and the emulated Quectel EG25 (Tests/StandIns/emulated_modem.py under umockdev), its "
                + "receiver streaming GGA and RMC ($GP); ModemManager asks the bus's real polkitd (ModemManager's "
                + "actions, and the service package's rule granting them to the service's user); one app per "
                + "service on one connection (python-dbus, Tests/Clients/location_client.py), timing on its own "
                + "clock ModemManager's PropertiesChanged for Location and the service's LocationUpdated")
        print(
            "whereaboutsd as installed, run as \(whereaboutsUser): [modem-gps] enable=true, [authorisation] "
                + "polkit=true; polkitd with polkit/io.github.whereabouts1.policy, the package's rules (among them "
                + "\(InstalledAuthorisation.modemManagerRules.lastPathComponent): Device.Control for "
                + "\(whereaboutsUser)) and /etc/polkit-1/rules.d/\(InstalledAuthorisation.grantRuleFile(for: app)) "
                + "(YES to location-always for \(app) run by \(InstalledAuthorisation.user)); a logind stand-in (no "
                + "process in a session); the app as \(InstalledAuthorisation.user)")
        print(
            "GeoClue 2.6 as installed, run as \(geoClueUser): [modem-gps] enable=true, every other source off (its "
                + "city-level GeoIP lookup, which 2.6 makes even so, fails without DNS), \(app) allowed as a system "
                + "component; polkitd with \(geoClueRules.path) (Device.Control and Location for \(geoClueUser)); "
                + "the app as root with an agent registered")
        let ours = try await measureWhereabouts(options)
        let geoClue = try await measureGeoClue(options)
        for index in ours.rates.indices {
            print(
                "\nAn epoch every \(ours.rates[index].interval) ms, \(options.reports) epochs after \(warmUp) left out (ModemManager's "
                    + "latest Location update before each epoch's first LocationUpdated → that LocationUpdated, at "
                    + "the app)")
            let both = [("whereaboutsd (as installed)", ours), ("GeoClue 2.6 (modem-gps)    ", geoClue)]
            for (name, figures) in both {
                let latencies = figures.rates[index]
                let first = latencies.firstFix.map { String(format: "%.1f s", $0) } ?? "?"
                print(
                    "   \(name): \(summary(latencies.milliseconds)); epochs missed \(latencies.missed), "
                        + "LocationUpdated beyond one an epoch \(latencies.extra); ModemManager's Location updates "
                        + "an epoch \(latencies.updatesPerEpoch); first fix \(first) after the app started")
            }
            let ratio = ratios(geoClue.rates[index].milliseconds, ours.rates[index].milliseconds)
            print("   GeoClue / whereaboutsd: \(ratio)")
        }
        let rates = [ours, geoClue].map { $0.refreshRate.map { "\($0) s" } ?? "?" }
        print(
            "\nGpsRefreshRate the service left: whereaboutsd \(rates[0]), GeoClue \(rates[1]); polkitd ran the "
                + "bench's grant rule for whereaboutsd's apps \(ours.polkitChecks ?? 0) times")
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

extension Duration {
    /// The duration in seconds.
    fileprivate var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
