import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

/// What one local user can do to everyone through agents and floods: a self-registered agent cannot store an
/// *always* grant polkit would have asked a password for, a second agent cannot replace the user's, floods leave
/// a few log lines, and one user's flood of polkit checks does not hold up another user's `Start`.
@Suite("Agents and floods from one user, end to end", .serialized)
struct AgentAndFloodTests {
    nonisolated static let app = "org.example.Navigator"
    static let agentScript = ProjectPaths.clients.appendingPathComponent("client_life.py")
    static let floodScript = ProjectPaths.clients.appendingPathComponent("polkit_flood.py")
    static let clientsScript = ProjectPaths.clients.appendingPathComponent("geoclue_clients.py")

    /// The daemon's log lines containing `text`.
    static func lines(_ log: String, containing text: String) -> [Substring] {
        log.split(separator: "\n").filter { $0.contains(text) }
    }

    /// `AddAgent(id)` from `connection`.
    @BusActor
    static func addAgent(_ connection: Connection, as id: String = "gnome-shell") async throws(DBusError) {
        _ = try await connection.call(
            destination: GeoClueTestClient.service, path: GeoClueTestClient.managerPath,
            interface: GeoClueTestClient.managerInterface, member: "AddAgent", arguments: [.string(id)],
            timeout: .seconds(20))
    }

    // MARK: Agents

    /// `nobody` runs an agent of its own (whitelisted id, allowing everything) and asks for *always*: polkit says
    /// challenge (a password, as the shipped `auth_self_keep`), and no polkit agent can ask for it, so the agent's
    /// yes is stored as *when in use* only.
    @Test(.timeLimit(.minutes(2)))
    func aSelfRegisteredAgentCannotStoreAnAlwaysGrant() async throws {
        let rule = """
            polkit.addRule(function(action, subject) {
                if (action.id.indexOf("io.github.whereabouts1.location-") == 0 && subject.user == "nobody"
                    && action.lookup("app") == "\(Self.app)") {
                    return polkit.Result.AUTH_SELF_KEEP;
                }
            });
            """
        let (bus, polkit, harness) = try PolkitLoadTests.daemon(rule: rule)
        defer {
            harness.stop()
            polkit.stop()
        }
        let agent = try polkit.spawn(["/usr/bin/python3", Self.agentScript.path, bus.address, "gnome-shell", "agent"])
        defer { agent.stop() }
        try Wait.until("the agent of nobody to register", timeout: 20) {
            guard agent.isRunning else { throw TestEnvironmentError("the agent exited:\n\(agent.log)") }
            return agent.log.contains("registered")
        }
        let cli = try ProjectPaths.product("whereabouts").path
        let asked = try polkit.run([cli, "authorise", "--always", "--desktop-id", Self.app])
        #expect(!asked.output.contains("authorisedAlways"), "\(asked.output)\n\(harness.daemonLog)")
        #expect(asked.output.contains("authorisedWhenInUse"), "\(asked.output)\n\(harness.daemonLog)")
        let uid = try #require(getpwnam("nobody")?.pointee.pw_uid)
        // The decision may reach the disk a moment after the answer.
        var grants = ""
        try? Wait.until("the decision to be written", timeout: 10) {
            grants = (try? String(contentsOf: harness.file("grants"), encoding: .utf8)) ?? ""
            return grants.contains("\(uid)\t\(Self.app)\t")
        }
        #expect(grants.contains("\(uid)\t\(Self.app)\twhen-in-use\t"), "\(grants)")
        #expect(!grants.contains("\talways\t"), "\(grants)")
        let checked = try polkit.run([cli, "authorise", "--check", "--desktop-id", Self.app])
        #expect(checked.output.contains("authorisedWhenInUse"), "\(checked.output)")
    }

    /// The user's agent says `MaxAccuracyLevel` 0; another connection of the same user registering an agent that
    /// allows everything is refused, and the cap holds. The same connection may register again, and once the real
    /// agent has left, another may take its place (a desktop shell restarting).
    @Test(.timeLimit(.minutes(1)))
    func aSecondAgentDoesNotLiftTheUsersCap() async throws {
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
        try harness.startDaemon()
        defer { harness.stop() }
        let real = try await GeoClueTestAgent(bus: harness.bus, maxAccuracyLevel: 0, answer: .refuse)
        try await real.register()
        let fake = try await GeoClueTestAgent(bus: harness.bus, maxAccuracyLevel: 8, answer: .allow(8))
        defer { Task { @BusActor in fake.close() } }
        await expectDBusError(DBusError.Name.accessDenied, containing: "UID 0 already has a GeoClue agent") {
            try await fake.register(as: "geoclue-demo-agent")
        }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        await expectDBusError(DBusError.Name.accessDenied, containing: "Geolocation disabled for UID 0") {
            _ = try await app.startedClient(desktopId: Self.app)
        }
        #expect(await fake.asked.isEmpty)
        try await real.register()

        await real.close()
        // The daemon hears of the real agent's connection closing a moment later.
        var registered = false
        let deadline = ContinuousClock.now + .seconds(10)
        while !registered && ContinuousClock.now < deadline {
            do {
                try await fake.register()
                registered = true
            } catch {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        #expect(registered, "\(harness.daemonLog)")
        let served = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in served.close() } }
        _ = try await served.startedClient(desktopId: Self.app)
        _ = try await served.waitForUpdates(1)
    }

    /// With logind on the bus, an agent whose process is in no login session (and its user in no graphical one)
    /// is refused; in a session of its user it registers.
    @Test(.timeLimit(.minutes(1)))
    func anAgentOutsideAnyLoginSessionIsRefused() async throws {
        let bus = try PrivateBus(extraPolicy: LogindMock.busPolicy)
        let logind = try LogindMock(bus: bus)
        defer { logind.stop() }
        try logind.mapProcesses([:])
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile], bus: bus)
        try harness.startDaemon()
        defer { harness.stop() }
        let outside = try await GeoClueTestAgent(bus: bus)
        defer { Task { @BusActor in outside.close() } }
        await expectDBusError(DBusError.Name.accessDenied, containing: "is in none") {
            try await outside.register()
        }
        try logind.addSession("c1", uid: 0, user: "root", active: true)
        try logind.mapProcesses([getpid(): "c1"])
        let inSession = try await GeoClueTestAgent(bus: bus)
        defer { Task { @BusActor in inSession.close() } }
        try await inSession.register()
    }

    // MARK: Log floods

    /// 300 connections of one user registering an agent (one that cannot be read) and leaving: a few lines of
    /// each kind, then one that counts those left out.
    @Test(.timeLimit(.minutes(2)))
    func anAgentFloodLeavesAFewLogLines() async throws {
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
        try harness.startDaemon()
        defer { harness.stop() }
        for _ in 0..<300 {
            let connection = try await Connection.open(address: harness.bus.address)
            try? await Self.addAgent(connection)
            await connection.close()
        }
        // Past the limiter's 2 s a line, one more registration logs, and says how many were left out.
        try await Task.sleep(for: .milliseconds(2100))
        let last = try await Connection.open(address: harness.bus.address)
        try await Self.addAgent(last)
        let name = await last.uniqueName
        try Wait.until("the last agent's registration to be logged", timeout: 10) {
            harness.daemonLog.contains("registered by \(name)")
        }
        let log = harness.daemonLog
        let agentLines = Self.lines(log, containing: "agent gnome-shell")
        #expect(agentLines.count <= 60, "\(agentLines.count) lines:\n\(log.suffix(3000))")
        #expect(log.contains("similar lines suppressed before this one"), "\(log.suffix(3000))")
        await last.close()
    }

    /// 500 `CheckAuthorisation` calls while polkit is absent: each is refused, a few are logged.
    @Test(.timeLimit(.minutes(2)))
    func aPolkitFailureFloodLeavesAFewLogLines() async throws {
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile], polkit: true)
        try harness.startDaemon()
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        let client = try await app.getClient()
        try await app.set(client, GeoClueTestClient.clientInterface, "DesktopId", .string(Self.app))
        var refused = 0
        for _ in 0..<500 {
            do {
                _ = try await app.call(client, "io.github.whereabouts1.Client", "CheckAuthorisation")
            } catch {
                refused += 1
            }
        }
        #expect(refused == 500)
        let denials = Self.lines(harness.daemonLog, containing: "denying location")
        #expect(denials.count >= 1 && denials.count <= 20, "\(denials.count) lines:\n\(harness.daemonLog.suffix(3000))")
    }

    // MARK: Fairness

    /// `nobody` floods the daemon with 1,100 `CheckAuthorisation` calls for apps of their own, which polkitd takes
    /// 0.1 s each to answer, one at a time: about two minutes of checks. Meanwhile the user `daemon` starts three
    /// apps polkit says yes to at once: each waits for at most a few of the flood's checks, not behind all of
    /// them, and the flood's checks beyond the per-user bound are refused with `LimitsExceeded` at once.
    @Test(.timeLimit(.minutes(3)))
    func aPolkitFloodFromOneUserDoesNotHoldUpAnotherUsersStart() async throws {
        let rule = """
            polkit.addRule(function(action, subject) {
                if (action.id.indexOf("io.github.whereabouts1.location-") != 0) { return polkit.Result.NOT_HANDLED; }
                if (subject.user == "nobody" && action.lookup("app").indexOf("org.example.Flood") == 0) {
                    polkit.spawn(["/bin/sleep", "0.1"]);
                    return polkit.Result.YES;
                }
                if (subject.user == "daemon" && action.lookup("app").indexOf("org.example.Other") == 0) {
                    return polkit.Result.YES;
                }
            });
            """
        let (bus, polkit, harness) = try PolkitLoadTests.daemon(rule: rule)
        defer {
            harness.stop()
            polkit.stop()
        }
        let flood = try polkit.spawn(
            ["/usr/bin/python3", Self.floodScript.path, bus.address, "org.example.Flood", "1100", "10"])
        defer { flood.stop() }
        try Wait.until("the flood to be sent", timeout: 30) {
            guard flood.isRunning else { throw TestEnvironmentError("the flood exited:\n\(flood.log)") }
            return flood.log.contains("sent 1100")
        }
        // The daemon has read the flood's calls once the first of those beyond the bound come back refused.
        try? Wait.until("the flood's checks beyond the bound to be refused", timeout: 10) {
            flood.log.contains("error org.freedesktop.DBus.Error.LimitsExceeded")
        }
        let began = ContinuousClock.now
        let other = try polkit.run(
            ["/usr/bin/python3", Self.clientsScript.path, bus.address, "org.example.Other.n{}", "burst", "3", "20"],
            asUser: "daemon", timeout: 40)
        let elapsed = ContinuousClock.now - began
        // Served at all while the flood's checks still wait is the point; how long it took is only shown.
        print("another user's 3 Starts during the flood took \(elapsed)")
        #expect(other.status == 0, "\(other.output)\n\(harness.daemonLog.suffix(3000))")
        #expect(other.output.contains("served 3 of 3"), "\(other.output)")
        #expect(flood.log.contains("error org.freedesktop.DBus.Error.LimitsExceeded"), "\(flood.log)")
        #expect(flood.log.contains("UID 65534 already has 1024 waiting"), "\(flood.log)")
        #expect(!flood.log.contains("answered"), "the flood was still waiting: \(flood.log)")
    }
}
