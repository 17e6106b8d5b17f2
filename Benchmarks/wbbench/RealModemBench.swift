import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport

/// The headline of `wbbench --modem`: both services against Debian's own ModemManager 1.20 driving the project's
/// emulated Quectel EG25 (``RealModemManager``), whose receiver streams an epoch a second (GGA and RMC, `$GP`
/// talkers, the only ones GeoClue 2.6 reads) while ModemManager has it on. Each service's app sees ModemManager's
/// `PropertiesChanged` for `Location` (one per sentence: ModemManager publishes each as it reads it when the refresh
/// rate is 0) and the service's `LocationUpdated` on one connection and one clock; each `LocationUpdated` is timed
/// from the latest `Location` update before it, the one that gave the service what it needed, whichever sentence
/// that was for the service.
enum RealModemBench {
    /// Fixes left out at the start, while the service warms up.
    static let warmUp = 3

    /// One service's figures.
    struct Latencies {
        /// Milliseconds from ModemManager's latest `Location` update to each `LocationUpdated`.
        var milliseconds: [Double] = []
        /// `LocationUpdated` signals with no `Location` update since the one before.
        var unpaired = 0
        /// Seconds from the app's start to its first `LocationUpdated`.
        var firstFix: Double?
        /// The refresh rate ModemManager ended with, as the service set it.
        var refreshRate: UInt32?
    }

    /// whereaboutsd as installed (``ModemBench/measureWhereabouts(_:)`` for the rest): the real polkitd on its bus
    /// with the package's policy and rules, ModemManager's actions among them, which ModemManager asks too; the
    /// daemon as root, whom polkit authorises for ModemManager's actions as the package's rule authorises the
    /// `whereabouts` user.
    @concurrent static func measureWhereabouts(epochs: Int) async throws -> Latencies {
        let authorisation = try InstalledAuthorisation(
            app: ModemBench.app, extraPolicy: try RealModemManager.busPolicy(polkitStandIn: false),
            modemManager: true)
        defer { authorisation.stop() }
        let modemManager = try RealModemManager(bus: authorisation.bus, polkitStandIn: false)
        defer { modemManager.stop() }
        try modemManager.setNMEA(true, talker: "GP")
        let daemon = try DaemonHarness(config: "[modem-gps]\nenable=true\n", polkit: true, bus: authorisation.bus)
        try daemon.startDaemon()
        defer { daemon.stop() }
        return try await measure(
            on: authorisation.bus, modemManager, asUser: InstalledAuthorisation.user, epochs: epochs)
    }

    /// GeoClue 2.6 with only its modem GPS source, through libmm-glib, the app as root with an agent registered;
    /// polkit's stand-in answers ModemManager (GeoClue runs as root here, whom polkit authorises for everything).
    @BusActor
    static func measureGeoClue(epochs: Int) async throws -> Latencies {
        let bus = try PrivateBus(extraPolicy: try RealModemManager.busPolicy())
        defer { bus.stop() }
        let modemManager = try await onOwnThread { try RealModemManager(bus: bus) }
        defer { modemManager.stop() }
        try modemManager.setNMEA(true, talker: "GP")
        let geoClue = try GeoClueHarness(
            config: GeoClueHarness.configuration(apps: [ModemBench.app: true], source: .modemGPS), bus: bus)
        try geoClue.start()
        defer { geoClue.stop() }
        let agent = try await GeoClueTestAgent.registered(on: bus, as: GeoClueHarness.agentId)
        defer { agent.close() }
        let latencies = try await measure(on: bus, modemManager, asUser: nil, epochs: epochs)
        if latencies.milliseconds.isEmpty {
            throw TestEnvironmentError("GeoClue sent no LocationUpdated\n\(geoClue.log)\n\(modemManager.log)")
        }
        return latencies
    }

    /// Starts the app as `user` (nil: root) and waits for ``warmUp`` plus `epochs` of its `LocationUpdated` (at most
    /// twice as many seconds plus 60), then pairs each after the warm-up with the latest `Location` update before it.
    @concurrent static func measure(
        on bus: PrivateBus, _ modemManager: RealModemManager, asUser user: String?, epochs: Int
    ) async throws -> Latencies {
        let started = ContinuousClock.now
        let app = try Unprivileged.spawn(
            [
                WPASupplicantMock.python.path, ModemBench.client.path, bus.address, ModemBench.app, "modem",
                modemManager.modemPath,
            ],
            asUser: user, environment: bus.environment, in: bus.directory)
        defer { app.stop() }
        let wanted = warmUp + epochs
        var firstFix: Double?
        let deadline = ContinuousClock.now + .seconds(2 * wanted + 60)
        while ModemBench.stamps(app.log, "fix").count < wanted {
            let log = app.log
            if log.contains("refused") || !app.isRunning {
                throw TestEnvironmentError("the app as \(user ?? "root") failed:\n\(log)")
            }
            if firstFix == nil, !ModemBench.stamps(log, "fix").isEmpty {
                firstFix = (ContinuousClock.now - started).seconds
            }
            guard ContinuousClock.now < deadline else {
                throw TestEnvironmentError(
                    "\(ModemBench.stamps(log, "fix").count) of \(wanted) fixes in time:\n\(log)\n\(modemManager.log)")
            }
            await pause(50)
        }
        let log = app.log
        let updates = ModemBench.stamps(log, "modem")
        let fixes = ModemBench.stamps(log, "fix")
        var latencies = Latencies(firstFix: firstFix, refreshRate: try? modemManager.gpsRefreshRate())
        for (index, fix) in fixes.enumerated().dropFirst(warmUp) {
            let previous = fixes[index - 1]
            guard let update = updates.last(where: { $0 <= fix }), update > previous else {
                latencies.unpaired += 1
                continue
            }
            latencies.milliseconds.append(ms(fix - update))
        }
        return latencies
    }

    /// Prints both services' figures and their ratios.
    static func report(whereabouts ours: Latencies, geoClue: Latencies, epochs: Int) {
        print(
            "\nReal ModemManager 1.20, emulated EG25, one epoch a second, \(epochs) fixes after \(warmUp) left out "
                + "(ModemManager's latest Location update before each LocationUpdated → that LocationUpdated, at the app)"
        )
        for (name, latencies) in [("whereaboutsd (as installed)", ours), ("GeoClue 2.6 (modem-gps)    ", geoClue)] {
            let first = latencies.firstFix.map { String(format: "%.1f s", $0) } ?? "?"
            let rate = latencies.refreshRate.map { "\($0) s" } ?? "?"
            print(
                "   \(name): \(summary(latencies.milliseconds)); first fix \(first) after the app started; "
                    + "GpsRefreshRate at the end \(rate)")
            if latencies.unpaired > 0 {
                print("   \(name): \(latencies.unpaired) LocationUpdated without a Location update since the last")
            }
        }
        print("   GeoClue / whereaboutsd: \(ModemBench.ratios(geoClue.milliseconds, ours.milliseconds))")
    }
}

extension Duration {
    /// The duration in seconds.
    fileprivate var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
