import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport

/// `wbbench --sky`: what the sky in view costs. whereaboutsd as installed follows a real gpsd fed through a pty, an
/// epoch a second with GGA, GSA, RMC and the satellites in view (a GPGSV pair and a GLGSV, their C/N0 changing each
/// epoch, as a receiver's do), for one exact client that reads only GeoClue's interfaces, then for the same client
/// once it has read `io.github.whereabouts1.Client`, which makes it a satellite watcher (`SatellitesChanged`). For
/// each: the messages on the bus per epoch (counted by a bus monitor), those whereaboutsd sent, and the CPU time of
/// whereaboutsd and of dbus-daemon per epoch (from `/proc/PID/task/*/schedstat`, nanoseconds).
enum SkyBench {
    /// One phase's figures, per epoch.
    struct PerEpoch {
        var messages: Double
        var fromDaemon: Double
        var satellitesChanged: Double
        var daemonMicroseconds: Double
        var busMicroseconds: Double
    }

    /// The CPU time all threads of `pid` have used, in nanoseconds.
    static func cpuNanoseconds(_ pid: pid_t) -> Int64 {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { total, task in
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8)) ?? ""
            return total + (text.split(separator: " ").first.flatMap { Int64($0) } ?? 0)
        }
    }

    @BusActor
    static func run(_ options: Options) async throws {
        let directory = try TemporaryDirectory.make(prefix: "wbbench-sky")
        defer { try? FileManager.default.removeItem(at: directory) }
        let terminal = try ReceiverTerminal()
        defer { terminal.close() }
        let port = try LoopbackTCP.freePort()
        let gpsd = GPSDProcess(device: terminal.path, port: port, logFile: directory.appendingPathComponent("gpsd.log"))
        try await gpsd.start()
        defer { gpsd.stop() }
        let epoch: @Sendable (Int, Double) -> NMEAEpoch = { index, now in
            var epoch = NMEAEpoch(time: now, latitude: 48.1 + Double(index % 1000) * 0.00001, longitude: 11.5)
            epoch.includesSky = true
            epoch.signalOffset = index % 3
            return epoch
        }
        let feeder = NMEAFeeder(terminal: terminal, interval: .seconds(1), epoch: epoch)
        feeder.start()
        defer { feeder.stop() }

        let authorisation = try InstalledAuthorisation(app: "wbbench", extraPolicy: BusMonitor.busPolicy)
        defer { authorisation.stop() }
        let daemon = try DaemonHarness(
            config: """
                [gpsd]
                enable=true
                host=127.0.0.1
                port=\(port)

                [authorisation]
                polkit=true
                grants=@DIR@/state/grants
                """, bus: authorisation.bus, folder: "daemon")
        defer { daemon.stop() }
        try FileManager.default.createDirectory(at: daemon.file("state"), withIntermediateDirectories: false)
        guard let user = getpwnam(FirstFixBench.whereaboutsUser),
            chown(daemon.file("state").path, user.pointee.pw_uid, user.pointee.pw_gid) == 0
        else { throw TestEnvironmentError("cannot hand the state folder to \(FirstFixBench.whereaboutsUser)") }
        try daemon.startDaemon(launcher: try Unprivileged.prefix(asUser: FirstFixBench.whereaboutsUser))
        guard let daemonPID = daemon.daemon?.pid else { throw TestEnvironmentError("whereaboutsd did not start") }
        let connections = try BusMonitor.connections(on: authorisation.bus)
        guard let daemonName = connections.first(where: { $0.value == daemonPID })?.key else {
            throw TestEnvironmentError("whereaboutsd is not on the bus: \(connections)")
        }
        print(
            "wbbench --sky: whereaboutsd \(try ProjectPaths.product("whereaboutsd").path) as installed (run as "
                + "\(FirstFixBench.whereaboutsUser), polkitd with the package's policy), gpsd "
                + "\(Machine.packageVersion("gpsd")) on \(terminal.path), an epoch a second (GGA, GSA, RMC, 2 GPGSV, "
                + "GLGSV; 7 satellites, C/N0 changing each epoch); one exact client in the bench's process; "
                + "\(options.reports) epochs a phase; \(ProcessInfo.processInfo.activeProcessorCount) cores, load "
                + "average \(Machine.loadAverage())")

        let app = try await GeoClueTestClient(bus: authorisation.bus)
        defer { app.close() }
        let path = try await app.startedClient(desktopId: "wbbench", level: 8)
        _ = try await app.waitForUpdates(3, timeout: .seconds(60))
        func phase(_ name: String) async throws -> PerEpoch {
            let monitor = BusMonitor(bus: authorisation.bus)
            try monitor.start()
            defer { monitor.stop() }
            let daemonBefore = cpuNanoseconds(daemonPID)
            let busBefore = cpuNanoseconds(authorisation.bus.pid)
            let first = feeder.writes.count
            while feeder.writes.count < first + options.reports { await pause(200) }
            let daemonCPU = cpuNanoseconds(daemonPID) - daemonBefore
            let busCPU = cpuNanoseconds(authorisation.bus.pid) - busBefore
            let messages = monitor.stop()
            let epochs = Double(options.reports)
            let figures = PerEpoch(
                messages: Double(messages.count) / epochs,
                fromDaemon: Double(messages.filter { $0.sender == daemonName }.count) / epochs,
                satellitesChanged: Double(messages.filter { $0.member == "SatellitesChanged" }.count) / epochs,
                daemonMicroseconds: Double(daemonCPU) / 1000 / epochs,
                busMicroseconds: Double(busCPU) / 1000 / epochs)
            print(
                String(
                    format: "   %@: %.2f messages on the bus an epoch, %.2f of them from whereaboutsd (%.2f "
                        + "SatellitesChanged); CPU an epoch: whereaboutsd %.0f µs, dbus-daemon %.0f µs",
                    name, figures.messages, figures.fromDaemon, figures.satellitesChanged,
                    figures.daemonMicroseconds, figures.busMicroseconds))
            return figures
        }
        print("\nPer epoch, the receiver at 1 Hz:")
        let without = try await phase("the client reads GeoClue's interfaces only")
        _ = try await app.getAll(path, "io.github.whereabouts1.Client")
        try await app.waitFor("the first SatellitesChanged", timeout: .seconds(30)) {
            app.signals.contains { $0.member == "SatellitesChanged" }
        }
        let with = try await phase("the client watches the satellites     ")
        print(
            String(
                format: "   the satellites' cost an epoch: %+.2f messages, whereaboutsd %+.0f µs, dbus-daemon %+.0f µs",
                with.messages - without.messages, with.daemonMicroseconds - without.daemonMicroseconds,
                with.busMicroseconds - without.busMicroseconds))
    }
}
