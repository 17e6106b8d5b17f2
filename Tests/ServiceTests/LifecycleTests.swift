import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

@Suite("whereaboutsd process lifecycle, end to end")
@BusActor
struct LifecycleTests {
    let manager = GeoClueTestClient.managerInterface
    let managerPath = GeoClueTestClient.managerPath
    let client = GeoClueTestClient.clientInterface

    @Test func ownsTheNameOnceStarted() async throws {
        let harness = try await makeHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        let started = ContinuousClock.now
        try await harness.launch()
        print("whereaboutsd owned org.freedesktop.GeoClue2 \((ContinuousClock.now - started).seconds) s after exec")
        // How fast it starts is measured by make bench; here, that the name's owner is the process started.
        let daemon = try #require(harness.daemon)
        let owner = try harness.busctl([
            "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
            "GetConnectionUnixProcessID", "s", "org.freedesktop.GeoClue2",
        ])
        let ownerPID = owner.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(owner.status == 0 && ownerPID == "u \(daemon.pid)", "\(owner.output)")
    }

    @Test func exitsWhenTheBusGoesAway() async throws {
        let harness = try await startedHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        let daemon = try #require(harness.daemon)
        // Stopping the bus removes its folder, log included; an open handle keeps the log readable.
        let log = try FileHandle(forReadingFrom: daemon.logFile)
        defer { try? log.close() }
        harness.bus.stop()
        _ = try await daemon.exited(within: 30)
        let text = String(decoding: try log.readToEnd() ?? Data(), as: UTF8.self)
        #expect(daemon.exitCode.map { $0 != 0 } ?? false, "exit status \(String(describing: daemon.exitCode))\n\(text)")
        #expect(text.contains("lost the connection to the bus"), "\(text)")
    }

    @Test func idleTimeoutExitsWithoutClients() async throws {
        let harness = try await makeHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        let started = ContinuousClock.now
        try await harness.launch(
            arguments: ["--config", harness.configFile.path, "--timeout", "1"], waitForName: false)
        let daemon = try #require(harness.daemon)
        _ = try await daemon.exited(within: 20)
        let elapsed = ContinuousClock.now - started
        print("whereaboutsd --timeout 1 without clients exited \(elapsed.seconds) s after exec")
        #expect(daemon.exitCode == 0, "\(daemon.log)")
        #expect(elapsed >= .seconds(1))
        // About 1.2 s on an idle machine; that it exits by itself at all is held by the wait above, as a bound on
        // the time would fail on a loaded machine (11 s was seen with the whole suite running).
        #expect(daemon.log.contains("not used for 1 seconds; exiting"), "\(daemon.log)")
    }

    @Test func anActivatedDaemonWaitsForItsLastClientThenExits() async throws {
        // Started by bus activation, as the package starts it: the bus holds the first call until the daemon owns
        // the name, so the client reaches the daemon within its first idle second however slow the machine is.
        let harness = try await makeHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        try harness.makeActivatable(arguments: ["--config", harness.configFile.path, "--timeout", "1"])
        let observer = try await GeoClueTestClient(bus: harness.bus)
        defer { observer.close() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let path = try await app.getClient()
        try await Task.sleep(for: .milliseconds(2500))
        #expect(
            !observer.nameOwnerChanges(of: GeoClueTestClient.service).contains { $0.new.isEmpty }, "\(harness.bus.log)")
        #expect(try await app.get(path, client, "Active") == .boolean(false))
        let closed = ContinuousClock.now
        app.close()
        try await observer.waitFor("whereaboutsd to leave the bus", timeout: .seconds(20)) {
            observer.nameOwnerChanges(of: GeoClueTestClient.service).contains { $0.new.isEmpty }
        }
        let elapsed = ContinuousClock.now - closed
        print("whereaboutsd --timeout 1 left the bus \(elapsed.seconds) s after its last client left")
        #expect(elapsed >= .milliseconds(950), "took \(elapsed.seconds) s")
        #expect(harness.bus.log.contains("not used for 1 seconds; exiting"), "\(harness.bus.log)")
    }

    @Test func sigtermExitsCleanly() async throws {
        let harness = try await startedHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        _ = try await app.startedClient()
        _ = try await app.waitForUpdates(1)
        let daemon = try #require(harness.daemon)
        daemon.signal(SIGTERM)
        _ = try await daemon.exited(within: 30)
        #expect(daemon.exitCode == 0, "\(daemon.log)")
    }

    @Test func inUseFollowsNonSystemClients() async throws {
        let harness = try await startedHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        let observer = try await GeoClueTestClient(bus: harness.bus)
        let system = try await GeoClueTestClient(bus: harness.bus)
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer {
            observer.close()
            system.close()
            app.close()
        }
        func inUseChanges() -> [Bool] {
            observer.signals.compactMap { message in
                guard message.member == "PropertiesChanged", message.path == managerPath else { return nil }
                let arguments = message.arguments()
                guard arguments.first?.string == manager else { return nil }
                return arguments[1].stringKeyedEntries?["InUse"]?.bool
            }
        }

        // A system component's client does not count.
        let systemPath = try await system.startedClient(desktopId: "system-app")
        _ = try await system.waitForUpdates(1)
        #expect(try await system.get(systemPath, client, "Active") == .boolean(true))
        #expect(try await observer.get(managerPath, manager, "InUse") == .boolean(false))
        #expect(inUseChanges().isEmpty)

        // An ordinary app's does, and every peer hears about it.
        let appPath = try await app.startedClient(desktopId: "whereabouts-test")
        #expect(try await observer.get(managerPath, manager, "InUse") == .boolean(true))
        try await observer.waitFor("PropertiesChanged InUse=true") { inUseChanges() == [true] }

        _ = try await app.call(appPath, client, "Stop")
        #expect(try await observer.get(managerPath, manager, "InUse") == .boolean(false))
        try await observer.waitFor("PropertiesChanged InUse=false") { inUseChanges() == [true, false] }

        // The system client is still active and still does not count.
        #expect(try await system.get(systemPath, client, "Active") == .boolean(true))
        #expect(try await observer.get(managerPath, manager, "InUse") == .boolean(false))
        #expect(inUseChanges() == [true, false])
    }
}

// MARK: - Helpers shared by the end-to-end suites

/// A private bus with `config` and `files` in its folder (`@DIR@` replaced by the folder), made off the bus
/// thread: the harness waits for the bus by polling, which on the bus thread would stall every other test's
/// connection meanwhile.
///
/// The files are written here rather than by the harness, through close-on-exec descriptors: a descriptor that a
/// process spawned meanwhile by another test inherits is closed only when that process exits, and the daemon
/// takes that late close of its static file for a change.
@concurrent
func makeHarness(config: String, files: [String: String] = [:]) async throws -> DaemonHarness {
    let harness = try DaemonHarness(config: config)
    for (name, text) in files {
        try write(text.replacingOccurrences(of: "@DIR@", with: harness.directory.path), to: harness.file(name))
    }
    return harness
}

/// A private bus and a running `whereaboutsd` that owns its name, started off the bus thread.
func startedHarness(config: String, files: [String: String] = [:]) async throws -> DaemonHarness {
    let harness = try await makeHarness(config: config, files: files)
    try await harness.launch()
    return harness
}

/// Writes `bytes` to `url` through a close-on-exec descriptor, so that no process the tests spawn meanwhile
/// inherits the file and closes it (a change the daemon watches for) later.
func write(_ bytes: [UInt8], to url: URL, flags: Int32 = O_WRONLY | O_CREAT | O_TRUNC) throws {
    let fd = open(url.path, flags | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw TestEnvironmentError("cannot open \(url.path): errno \(errno)") }
    defer { close(fd) }
    guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
        throw TestEnvironmentError("short write to \(url.path)")
    }
}

/// Writes `text` to `url` like ``write(_:to:flags:)``.
func write(_ text: String, to url: URL, flags: Int32 = O_WRONLY | O_CREAT | O_TRUNC) throws {
    try write(Array(text.utf8), to: url, flags: flags)
}

extension DaemonHarness {
    /// ``startDaemon(arguments:waitForName:)`` off the bus thread.
    @concurrent
    func launch(arguments: [String]? = nil, waitForName: Bool = true) async throws {
        try startDaemon(arguments: arguments, waitForName: waitForName)
    }
}

extension ChildProcess {
    /// Waits, without blocking a thread, until the process exits; returns how long that took.
    @concurrent
    func exited(within timeout: Double) async throws -> Duration {
        let start = ContinuousClock.now
        while isRunning {
            guard ContinuousClock.now - start < .seconds(timeout) else {
                throw TestEnvironmentError("process \(pid) still running after \(timeout) s:\n\(log)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return ContinuousClock.now - start
    }
}

extension Duration {
    /// The duration in seconds, for messages.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// A `Timestamp` property value, `(tt)`, in seconds since the epoch.
func timestampSeconds(_ value: DBusValue?) -> Double? {
    guard let fields = value?.fields, fields.count == 2, let seconds = fields[0].uint64, let micro = fields[1].uint64
    else { return nil }
    return Double(seconds) + Double(micro) / 1e6
}
