import Foundation
import Glibc
import TestBasics
import TestSupport

/// A GeoClue2-compatible service under test.
enum ServiceKind: String, CaseIterable, Sendable {
    case whereabouts = "whereaboutsd"
    case geoclue = "GeoClue 2.6"

    /// The key in the JSON output.
    var key: String { self == .whereabouts ? "whereabouts" : "geoclue" }
}

/// One service on the bench bus, which polkitd serves with the package's policy (``BenchBus``), reading one
/// receiver at 1 fix/s from an NMEA socket (whereaboutsd's `[network-nmea] nmea-socket=`, GeoClue's
/// `--nmea-socket`), with the app ``desktopId`` (whereaboutsd: and any other apps given) allowed as a system
/// component in its configuration. whereaboutsd asks polkit, as installed; GeoClue 2.6 has no polkit check.
final class Contender: @unchecked Sendable {
    /// The app the load clients claim to be.
    static let desktopId = "bench-app"

    let kind: ServiceKind
    let bus: PrivateBus
    let feeder: NMEASocketFeeder
    let directory: URL
    private let geoClue: GeoClueHarness?
    private(set) var process: ChildProcess?

    init(_ kind: ServiceKind, on bus: PrivateBus, apps: [String] = [Contender.desktopId]) throws {
        self.kind = kind
        self.bus = bus
        switch kind {
        case .whereabouts:
            geoClue = nil
            directory = bus.directory.appendingPathComponent("whereabouts-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            feeder = try NMEASocketFeeder(path: directory.appendingPathComponent("nmea.sock").path)
            let entries = apps.map { "[\($0)]\nallowed=true\nsystem=true\nusers=\n\n" }.joined()
            let config = """
                [network-nmea]
                enable=true
                nmea-socket=\(feeder.path)

                [agent]
                whitelist=\(GeoClueHarness.agentId)

                \(entries)[authorisation]
                polkit=true
                grants=\(directory.path)/grants

                """
            try config.write(to: configFile, atomically: true, encoding: .utf8)
        case .geoclue:
            let harness = try GeoClueHarness(
                config: GeoClueHarness.configuration(apps: [Contender.desktopId: true]), bus: bus)
            geoClue = harness
            directory = harness.directory
            feeder = harness.nmea
        }
        // A receiver heading north, a new position every second.
        feeder.startEpochs(interval: .seconds(1)) { index, now in
            NMEAEpoch(time: now, latitude: 48.1 + Double(index % 10_000) * 0.00001, longitude: 11.5)
        }
    }

    private var configFile: URL { directory.appendingPathComponent("whereabouts.conf") }
    private var stampFile: URL { directory.appendingPathComponent("exec-time") }

    /// Starts the service. The wall-clock time just before the exec is noted (``execTime``).
    func launch() throws {
        try? FileManager.default.removeItem(at: stampFile)
        let prelude = "printf '%s' \"$EPOCHREALTIME\" > '\(stampFile.path)'"
        let command: (executable: URL, arguments: [String])
        switch kind {
        case .whereabouts:
            let daemon = try ProjectPaths.product("whereaboutsd")
            command = (
                URL(fileURLWithPath: "/bin/bash"),
                ["-c", prelude + "\nexec \"$0\" \"$@\"", daemon.path, "--config", configFile.path, "--timeout", "0"]
            )
        case .geoclue:
            command = try geoClue!.launchCommand(prelude: prelude)
        }
        process = try ChildProcess(
            command.executable, command.arguments, environment: bus.environment,
            logFile: directory.appendingPathComponent("service.log"))
    }

    /// The wall-clock seconds just before the last launch's exec.
    var execTime: Double? {
        (try? String(contentsOf: stampFile, encoding: .utf8)).flatMap {
            Double($0.trimmingCharacters(in: .whitespaces))
        }
    }

    /// The running service's process id.
    var pid: pid_t {
        get throws {
            guard let process, process.isRunning else {
                throw TestEnvironmentError("\(kind.rawValue) is not running:\n\(process?.log ?? "")")
            }
            return process.pid
        }
    }

    /// Stops the service (SIGTERM, then SIGKILL after 5 s), blocking until it has exited.
    func stopService() {
        process?.stop(grace: 5)
    }

    /// Stops the service and its receiver; the bench bus stays.
    func shutdown() {
        stopService()
        feeder.close()
        geoClue?.stop()
    }
}
