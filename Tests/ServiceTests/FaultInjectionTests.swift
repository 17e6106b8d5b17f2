import DBus
import Foundation
import Loop
import TestSupport
import Testing

/// Faults from outside: a peer creating clients without end, peers leaving in the middle of calls, a state
/// directory that is read-only or full. (gpsd, polkitd and the bus going away, and kills during grant writes, are
/// covered by their own suites.)
@Suite("Fault injection")
struct FaultInjectionTests {
    static let manager = "io.github.whereabouts1.Manager"

    /// The daemon's resident memory in KiB, from /proc.
    static func residentKiB(_ process: ChildProcess) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }

    /// Creates clients on `app` until the service refuses one, and returns how many it made and the refusal.
    @BusActor
    static func createUntilRefused(_ app: GeoClueTestClient, atMost limit: Int) async -> (
        made: Int, refusal: DBusError?
    ) {
        for made in 0..<limit {
            do {
                _ = try await app.createClient()
            } catch {
                return (made, error)
            }
        }
        return (limit, nil)
    }

    @Test func clientsAreLimitedPerConnectionAndPerUserAndMemoryStaysBounded() async throws {
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        try harness.startDaemon()
        let daemon = try #require(harness.daemon)
        let before = Self.residentKiB(daemon)
        let first = try await GeoClueTestClient(bus: harness.bus)
        let second = try await GeoClueTestClient(bus: harness.bus)
        let third = try await GeoClueTestClient(bus: harness.bus)

        let one = await Self.createUntilRefused(first, atMost: 5000)
        #expect(one.made == 4096)
        #expect(one.refusal?.name == "org.freedesktop.DBus.Error.LimitsExceeded", "\(String(describing: one.refusal))")
        #expect(one.refusal?.message.contains("one connection") == true)
        let two = await Self.createUntilRefused(second, atMost: 5000)
        #expect(two.made == 4096)
        let three = await Self.createUntilRefused(third, atMost: 10)
        #expect(three.made == 0, "8192 clients is the most one user may hold")
        #expect(three.refusal?.message.contains("one user") == true, "\(String(describing: three.refusal))")
        let full = Self.residentKiB(daemon)
        print(
            "fault injection: resident \(before) KiB idle, \(full) KiB with 8192 clients (\((full - before) * 1024 / 8192) bytes a client)"
        )

        await first.close()
        // Dropping 4096 clients takes a while in a sanitizer build.
        let deadline = ContinuousClock.now + .seconds(60)
        var allowed = false
        while !allowed && ContinuousClock.now < deadline {
            allowed = (try? await third.createClient()) != nil
            if !allowed { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(allowed, "the user's count falls when a connection goes")
        await second.close()
        await third.close()
        #expect(daemon.isRunning)
    }

    @Test func peersLeavingInTheMiddleOfCallsLeaveNothingBehind() async throws {
        let harness = try DaemonHarness(config: "[agent]\nwhitelist=gnome-shell\n")
        defer { harness.stop() }
        try harness.startDaemon(arguments: ["--config", harness.configFile.path, "--timeout", "2"])
        let daemon = try #require(harness.daemon)
        for round in 0..<100 {
            let peer = try await GeoClueTestClient(bus: harness.bus)
            await Self.abandon(peer, round: round)
        }
        // With no client left, the idle timeout ends the daemon; a client leaked for a vanished peer would keep it.
        let deadline = ContinuousClock.now + .seconds(15)
        while daemon.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!daemon.isRunning, "clients of vanished peers were kept:\n\(harness.daemonLog)")
        #expect(daemon.exitCode == 0, "\(harness.daemonLog)")
        #expect(harness.daemonLog.contains("not used for 2 seconds"), "\(harness.daemonLog)")
    }

    /// Sends calls without waiting for their replies and closes the connection: a bare CreateClient, or a client
    /// with a single request waiting for a fix that never comes.
    @BusActor
    static func abandon(_ peer: GeoClueTestClient, round: Int) async {
        func send(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue]) {
            if let message = try? Message.methodCall(
                destination: GeoClueTestClient.service, path: path, interface: interface, member: member,
                arguments: arguments)
            {
                peer.connection.send(message)
            }
        }
        if round % 2 == 0, let client = try? await peer.createClient() {
            try? await peer.set(client, GeoClueTestClient.clientInterface, "DesktopId", .string("leaving-app"))
            send(client, "io.github.whereabouts1.Client", "RequestLocation", [.vardict(["timeout": .uint32(60_000)])])
            send(client, GeoClueTestClient.clientInterface, "Start", [])
        } else {
            send(GeoClueTestClient.managerPath, GeoClueTestClient.managerInterface, "CreateClient", [])
            send(GeoClueTestClient.managerPath, GeoClueTestClient.managerInterface, "GetClient", [])
        }
        peer.close()
    }

    /// The daemon with its state folder (grants and the services switch) mounted by `setup`, a shell command run
    /// in a private mount namespace with the folder as `$0`.
    static func daemonWithState(mountedBy setup: String) throws -> DaemonHarness {
        let harness = try DaemonHarness(
            config: staticConfig + "\n\n[authorisation]\npolkit=false\ngrants=@DIR@/state/grants\n",
            files: ["geolocation": staticFile])
        let state = harness.file("state")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        try harness.startDaemon(launcher: [
            try Executables.find("unshare").path, "--mount", "--propagation", "private", "/bin/sh", "-c",
            "\(setup) && exec \"$@\"", state.path,
        ])
        return harness
    }

    /// Switches location services off and on with the state folder unwritable: each switch takes effect, and the
    /// log says why it could not be kept.
    static func switchingWorksWithoutStorage(_ harness: DaemonHarness, expecting reason: String) async throws {
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        let watching = try await app.startedClient()
        _ = try await app.waitForUpdates(1)
        try await app.set(GeoClueTestClient.managerPath, Self.manager, "LocationServicesEnabled", .boolean(false))
        #expect(try await app.get(watching, GeoClueTestClient.clientInterface, "Active") == .boolean(false))
        #expect(harness.daemonLog.contains("location services switch: cannot save"), "\(harness.daemonLog)")
        #expect(harness.daemonLog.contains(reason), "\(harness.daemonLog)")
        try await app.set(GeoClueTestClient.managerPath, Self.manager, "LocationServicesEnabled", .boolean(true))
        _ = try await app.waitForUpdates(2)
        #expect(harness.daemon?.isRunning == true)
    }

    @Test func aReadOnlyStateFolderKeepsTheServiceWorking() async throws {
        let harness = try Self.daemonWithState(mountedBy: "mount -o bind,ro \"$0\" \"$0\"")
        defer { harness.stop() }
        try await Self.switchingWorksWithoutStorage(harness, expecting: "Read-only file system")
    }

    @Test func aFullStateFolderKeepsTheServiceWorking() async throws {
        let harness = try Self.daemonWithState(
            mountedBy:
                "mount -t tmpfs -o size=16k tmpfs \"$0\" && { dd if=/dev/zero of=\"$0/filler\" bs=1k count=64 2>/dev/null; true; }"
        )
        defer { harness.stop() }
        try await Self.switchingWorksWithoutStorage(harness, expecting: "No space left on device")
    }
}

extension FaultInjectionTests {
    @Test func anOversizedCallIsRefusedWithoutBeingDecoded() async throws {
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        try harness.startDaemon()
        let daemon = try #require(harness.daemon)
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        let client = try await app.getClient()
        let before = Self.residentKiB(daemon)
        let huge = DBusValue.dictionary(
            key: "s", value: "v",
            (0..<200_000).map { DBusValue.DictEntry(.string("option\($0)"), .variant(.uint32(1))) })
        for _ in 0..<5 {
            await expectDBusError("org.freedesktop.DBus.Error.LimitsExceeded", containing: "values") {
                _ = try await app.call(client, "io.github.whereabouts1.Client", "RequestLocation", [huge])
            }
        }
        let after = Self.residentKiB(daemon)
        print("fault injection: resident \(before) KiB before and \(after) KiB after five 200,000-entry calls")
        #expect(try await app.get(client, GeoClueTestClient.clientInterface, "Active") == .boolean(false))
    }
}

extension FaultInjectionTests {
    @Test func aDesktopIdWithLineBreaksForgesNoLogLine() async throws {
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        try harness.startDaemon()
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        _ = try await app.startedClient(desktopId: "forger\n<0>forged\r\nline")
        try Wait.until("the daemon logs the client's start", timeout: 10) {
            harness.daemonLog.contains("started at level")
        }
        let lines = harness.daemonLog.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(!lines.contains { $0.hasPrefix("<0>") || $0.hasPrefix("line") }, "\(harness.daemonLog)")
        #expect(lines.contains { $0.hasPrefix("<6>") && $0.contains("forger <0>forged  line") }, "\(harness.daemonLog)")
    }
}
