import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport

/// `wbbench --first-fix`: how long an app waits for its first exact fix from a modem's receiver that starts cold,
/// whereaboutsd with predicted orbits (downloaded, then from its cache) and without, and GeoClue 2.6 beside it.
///
/// ModemManager is the stand-in (`Tests/StandIns/modemmanager_mock.py`): Debian's ModemManager implements
/// `InjectAssistanceData` only for QMI and MBIM modems, and the emulated modem is an AT one. Its receiver
/// (`SetReceiver`) streams an epoch a second while a GPS source is on and has no position until its time to first
/// fix has passed: `--cold-start` seconds, or `--assisted-start` once orbits were injected. Those two are the
/// model's, not a receiver's measurements; what the bench measures is what each service adds to them: finding the
/// modem's need, the download, the injection, the first epoch read. Each app (`location_client.py first`) times from
/// just before `Start` to its first `LocationUpdated`.
enum FirstFixBench {
    /// The desktop id of the bench's app, which both services let locate.
    static let app = "wbbench"
    /// The app.
    static let client = ProjectPaths.clients.appendingPathComponent("location_client.py")
    /// Where the loopback server keeps the orbits.
    static let orbitsPath = "/xtra3grc.bin"
    /// A predicted-orbit file of the size of Qualcomm's XTRA3 files (about 60 KiB).
    static let orbits = String(repeating: "X", count: 60 * 1024)
    /// The receiver's position.
    static let position = (latitude: 48.1173, longitude: 11.5166)
    /// The user the Debian package runs whereaboutsd as.
    static let whereaboutsUser = "whereabouts"
    /// Every source but the modem's receiver off, on both sides, so that the first fix is the receiver's.
    static let otherSourcesOff = """
        [wifi]
        enable=false

        [ip]
        enable=false

        [3g]
        enable=false

        [cdma]
        enable=false
        """

    /// The seconds to each app's first fix, per way of running.
    struct Figures {
        var downloaded: [Double] = []
        var cached: [Double] = []
        var unassisted: [Double] = []
        var geoClue: [Double] = []
        /// The orbit file's requests at the server, and its size.
        var downloads = 0
    }

    /// whereaboutsd as installed (run as ``whereaboutsUser``, polkitd with the package's policy and the bench's
    /// grant, the app as `nobody`), on one bus with the ModemManager stand-in and a loopback HTTPS server holding the
    /// orbits. Each trial starts a daemon with an empty state folder and a new modem (the orbits are downloaded),
    /// then gives it another new modem (they come from its cache), then a daemon with `assistance=false`.
    @concurrent static func measureWhereabouts(_ options: Options, into figures: inout Figures) async throws {
        let authority = try TestCertificateAuthority.make()
        defer { authority.remove() }
        let server = try IchnaeaServer(certificates: authority)
        defer { server.stop() }
        try server.setResponse(
            path: orbitsPath, .answer(status: 200, body: orbits, headers: ["Cache-Control": "max-age=86400"]))
        let authorisation = try InstalledAuthorisation(app: app, extraPolicy: ModemManagerMock.busPolicy)
        defer { authorisation.stop() }
        let modemManager = try ModemManagerMock(bus: authorisation.bus)
        defer { modemManager.stop() }
        guard let user = getpwnam(whereaboutsUser) else {
            throw TestEnvironmentError("no user \(whereaboutsUser): make it from Packaging/debian/whereabouts.sysusers")
        }
        let uid = user.pointee.pw_uid
        let gid = user.pointee.pw_gid
        for action in [ModemManagerMock.Action.deviceControl, .location] {
            try modemManager.authorise(action, users: [0, uid])
        }
        for trial in 0..<options.trials {
            for assisted in [true, false] {
                let daemon = try DaemonHarness(
                    config: """
                        [modem-gps]
                        enable=true
                        assistance=\(assisted)

                        [network]
                        ca-file=\(authority.certificateFile.path)

                        \(otherSourcesOff)

                        [authorisation]
                        polkit=true
                        grants=@DIR@/state/grants
                        """, bus: authorisation.bus, folder: "daemon-\(trial)-\(assisted)")
                defer { daemon.stop() }
                let state = daemon.file("state")
                try FileManager.default.createDirectory(at: state, withIntermediateDirectories: false)
                guard chown(state.path, uid, gid) == 0 else {
                    throw TestEnvironmentError("cannot hand \(state.path) to \(whereaboutsUser)")
                }
                try daemon.startDaemon(launcher: try Unprivileged.prefix(asUser: whereaboutsUser))
                do {
                    let times = try (assisted ? 0..<2 : 0..<1).map { _ in
                        let modem = try modemManager.addModem(
                            capabilities: [.gpsNMEA], state: .registered, assistanceData: ModemManagerMock.xtra,
                            assistanceServers: [server.url(orbitsPath)])
                        defer { try? modemManager.removeModem(modem) }
                        return try firstFix(
                            on: authorisation.bus, modemManager, modem, asUser: InstalledAuthorisation.user, options)
                    }
                    if assisted {
                        figures.downloaded.append(times[0])
                        figures.cached.append(times[1])
                    } else {
                        figures.unassisted.append(times[0])
                    }
                } catch {
                    throw TestEnvironmentError("\(error)\nwhereaboutsd:\n\(daemon.daemonLog.suffix(4000))")
                }
            }
        }
        figures.downloads = try server.requests.filter { $0.path == orbitsPath }.count
    }

    /// GeoClue 2.6 with only its modem GPS source on and the stand-in's modem, which takes XTRA as the other
    /// side's does (GeoClue never injects any); the app as root with an agent registered.
    @BusActor
    static func measureGeoClue(_ options: Options, into figures: inout Figures) async throws {
        let rig = try await GeoClueModemRig(app: app)
        defer { rig.stop() }
        for _ in 0..<options.trials {
            do {
                figures.geoClue.append(try firstFix(on: rig.bus, rig.modemManager, rig.modem, asUser: nil, options))
            } catch {
                throw TestEnvironmentError("\(error)\nGeoClue:\n\(rig.geoClue.log.suffix(4000))")
            }
        }
    }

    /// Gives `modem` a receiver that starts cold, waits until the service offers exact accuracy, runs the app as
    /// `user` (nil: root) until its first fix, and waits until the service has turned the receiver off again, so that
    /// the next start is cold too. Returns the app's seconds from `Start` to the fix.
    static func firstFix(
        on bus: PrivateBus, _ modemManager: ModemManagerMock, _ modem: String, asUser user: String?,
        _ options: Options
    ) throws -> Double {
        try modemManager.setReceiver(
            modem, latitude: position.latitude, longitude: position.longitude,
            coldStart: Double(options.coldStart), assistedStart: Double(options.assistedStart))
        try Wait.until("the service to offer exact accuracy", timeout: 60) {
            let result = try Unprivileged.run(
                [
                    "busctl", "--address=\(bus.address)", "get-property", "org.freedesktop.GeoClue2",
                    "/org/freedesktop/GeoClue2/Manager", "org.freedesktop.GeoClue2.Manager", "AvailableAccuracyLevel",
                ], asUser: nil, environment: bus.environment, in: bus.directory)
            return result.output.trimmingCharacters(in: .whitespacesAndNewlines) == "u 8"
        }
        let timeout = options.coldStart * 3 + 30
        let result = try Unprivileged.run(
            [WPASupplicantMock.python.path, client.path, bus.address, app, "first", String(timeout)], asUser: user,
            environment: bus.environment, in: bus.directory, timeout: Double(timeout + 30))
        let words = result.output.split(whereSeparator: \.isWhitespace)
        guard result.status == 0, words.count == 2, words[0] == "fix", let milliseconds = Double(words[1]) else {
            throw TestEnvironmentError("the app as \(user ?? "root") answered \(result.status): \(result.output)")
        }
        try Wait.until("the receiver turned off", timeout: 120) {
            !(try modemManager.locationSetup(modem).enabled.contains(.gpsNMEA))
        }
        return milliseconds / 1000
    }

    @BusActor
    static func run(_ options: Options) async throws {
        print(
            "wbbench --first-fix: whereaboutsd \(try ProjectPaths.product("whereaboutsd").path), GeoClue "
                + "\(GeoClueHarness.executable.path) \(Machine.packageVersion("geoclue-2.0")), polkitd "
                + "\(Machine.packageVersion("polkitd")); \(ProcessInfo.processInfo.activeProcessorCount) cores, "
                + "load average \(Machine.loadAverage())")
        print(
            "the ModemManager stand-in (Tests/StandIns/modemmanager_mock.py; Debian's ModemManager injects orbits "
                + "only into QMI and MBIM modems) with one registered modem taking XTRA, whose receiver streams "
                + "GGA, GSA and RMC ($GP) each second while a GPS source is on, without a position for "
                + "\(options.coldStart) s after it is turned on (cold), \(options.assistedStart) s once orbits "
                + "were injected: the model's figures, not a receiver's; each service with every other source off; "
                + "the app (Tests/Clients/location_client.py first) times from just before Start to its first "
                + "LocationUpdated; \(options.trials) trials, the receiver turned off between them")
        print(
            "whereaboutsd as installed, run as \(whereaboutsUser), polkitd with the package's policy and the bench's "
                + "grant, the app as \(InstalledAuthorisation.user); the orbits (\(orbits.utf8.count) bytes, "
                + "max-age 86400) from a loopback HTTPS server named in the modem's AssistanceDataServers. GeoClue "
                + "2.6: [modem-gps] enable=true, the app as root with an agent registered")
        var figures = Figures()
        try await measureWhereabouts(options, into: &figures)
        try await measureGeoClue(options, into: &figures)
        print("\nSeconds from Start to the first exact fix, a cold receiver (median, then each trial):")
        let rows: [(String, [Double])] = [
            ("whereaboutsd, orbits downloaded and injected", figures.downloaded),
            ("whereaboutsd, orbits from its cache, injected", figures.cached),
            ("whereaboutsd, assistance=false               ", figures.unassisted),
            ("GeoClue 2.6 (modem-gps), which injects none  ", figures.geoClue),
        ]
        for (name, seconds) in rows {
            let median = Percentile.of(seconds, 50).map { String(format: "%.2f s", $0) } ?? "?"
            print("   \(name): \(median) (\(seconds.map { String(format: "%.2f", $0) }.joined(separator: ", ")))")
        }
        if let ours = Percentile.of(figures.downloaded, 50), let theirs = Percentile.of(figures.geoClue, 50) {
            print(String(format: "   GeoClue / whereaboutsd with orbits downloaded: %.1f×", theirs / ours))
        }
        print(
            "orbit file requests at the server: \(figures.downloads) for \(options.trials) daemons started with an "
                + "empty state folder")
    }
}
