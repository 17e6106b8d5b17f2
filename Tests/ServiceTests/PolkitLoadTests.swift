import Foundation
import Glibc
import TestSupport
import Testing

/// Authorisation under load and polkit's answers reused: a real polkitd, the daemon asking it, and apps run as
/// the unprivileged `nobody` (root is always authorised), each on a bus connection of its own
/// (`Tests/Clients/geoclue_clients.py`).
@Suite("polkit under load and its answers reused, end to end", .serialized)
struct PolkitLoadTests {
    nonisolated static let app = "org.example.Navigator"
    static let script = ProjectPaths.clients.appendingPathComponent("geoclue_clients.py")
    /// The load clients, at a lower priority than the daemon and polkitd, so that the suites running beside them
    /// keep their timing.
    static let clients = ["/usr/bin/nice", "-n", "10", "/usr/bin/python3", script.path]

    /// A rule answering `result` for `action` when nobody asks for the test app (or one whose id begins with
    /// the test app's); every time polkitd runs it
    /// for a Whereabouts action, it logs `whereabouts-check ACTION`.
    static func rule(_ result: String, action: String) -> String {
        """
        polkit.addRule(function(action, subject) {
            if (action.id.indexOf("io.github.whereabouts1.") == 0 && subject.user == "nobody") {
                polkit.log("whereabouts-check " + action.id);
            }
            if (action.id == "\(action)" && subject.user == "nobody" && action.lookup("app").indexOf("\(app)") == 0) {
                return polkit.Result.\(result);
            }
        });
        """
    }

    /// Lowers the priority of the bus, polkitd and the daemon of a load test, as ``clients`` does for the clients:
    /// the load then takes only what the suites running beside it leave, and their timing holds.
    static func lowerPriority(_ bus: PrivateBus, _ polkit: PolkitHarness, _ harness: DaemonHarness) {
        for pid in [bus.pid, polkit.process?.pid, harness.daemon?.pid].compactMap({ $0 }) {
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(pid), 10)
        }
    }

    /// How many times polkitd ran the rule for `action`, from its log.
    static func checks(_ polkit: PolkitHarness, _ action: String) -> Int {
        polkit.log.components(separatedBy: "whereabouts-check \(action)").count - 1
    }

    /// A private bus with polkitd running `rule`, and the daemon with `config` (the static source by default)
    /// asking it; a failure to start the daemon stops polkitd again.
    static func daemon(
        rule: String, config: String = staticConfig, files: [String: String] = ["geolocation": staticFile]
    ) throws -> (PrivateBus, PolkitHarness, DaemonHarness) {
        let bus = try PolkitHarness.makeBus()
        let polkit = try PolkitHarness(bus: bus, rules: ["10-test.rules": rule])
        do {
            let harness = try DaemonHarness(config: config, files: files, polkit: true, bus: bus)
            try harness.startDaemon()
            return (bus, polkit, harness)
        } catch {
            polkit.stop()
            throw error
        }
    }

    /// A private bus with polkitd saying yes to *always* for everyone, and the daemon with the static source
    /// asking it, all at lowered priority.
    static func daemonWithAlwaysYes() throws -> (PrivateBus, PolkitHarness, DaemonHarness) {
        let (bus, polkit, harness) = try daemon(rule: rule("YES", action: "io.github.whereabouts1.location-always"))
        lowerPriority(bus, polkit, harness)
        return (bus, polkit, harness)
    }

    /// How many times polkitd has (re)loaded its rules, from its log.
    static func ruleLoads(_ polkit: PolkitHarness) -> Int {
        polkit.log.components(separatedBy: "Finished loading, compiling and executing").count - 1
    }

    @Test(.timeLimit(.minutes(3)))
    func aThousandAppsStartingAtOnceOnAThousandConnectionsAreAllServed() async throws {
        let (bus, polkit, harness) = try Self.daemonWithAlwaysYes()
        defer {
            harness.stop()
            polkit.stop()
        }
        let result = try polkit.run(
            Self.clients + [bus.address, Self.app, "burst", "1000", "100"], timeout: 150)
        #expect(result.status == 0, "\(result.output)\n\(harness.daemonLog.suffix(4000))")
        #expect(result.output.contains("served 1000 of 1000"), "\(result.output)")
        #expect(!harness.daemonLog.contains("denying location"), "\(harness.daemonLog.suffix(4000))")
        // One user, one app, one session state: the checks in flight together are one, and the answer is reused;
        // always said yes, so when in use is never asked.
        let alwaysChecks = Self.checks(polkit, "io.github.whereabouts1.location-always")
        #expect(alwaysChecks >= 1 && alwaysChecks <= 5, "\(alwaysChecks) checks")
        #expect(Self.checks(polkit, "io.github.whereabouts1.location-when-in-use") == 0)
    }

    /// Every client asks about an app of its own, so no answer is reused: 300 checks queue for polkitd,
    /// and none of them runs out the time meant for an absent polkit while it waits.
    @Test(.timeLimit(.minutes(3)))
    func manyChecksThatCannotBeReusedQueueAndAreAllAnswered() async throws {
        let (bus, polkit, harness) = try Self.daemonWithAlwaysYes()
        defer {
            harness.stop()
            polkit.stop()
        }
        let result = try polkit.run(
            Self.clients + [bus.address, Self.app + ".n{}", "burst", "300", "100"], timeout: 150)
        #expect(result.status == 0, "\(result.output.prefix(4000))\n\(harness.daemonLog.suffix(4000))")
        #expect(result.output.contains("served 300 of 300"), "\(result.output.prefix(4000))")
        #expect(Self.checks(polkit, "io.github.whereabouts1.location-always") >= 300)
        #expect(Self.checks(polkit, "io.github.whereabouts1.location-when-in-use") == 0)
    }

    /// A slow polkitd (each check of the rule takes 0.3 s, one at a time) given 50 checks at once: they take 15 s
    /// in all, more than the 10 s meant for a polkit that does not answer, yet each is answered within that time
    /// of being sent, so every app is served.
    @Test(.timeLimit(.minutes(2)))
    func aBusyPolkitIsNotAnAbsentOne() async throws {
        let bus = try PolkitHarness.makeBus()
        let slowRule = """
            polkit.addRule(function(action, subject) {
                if (action.id == "io.github.whereabouts1.location-always" && subject.user == "nobody"
                    && action.lookup("app").indexOf("\(Self.app)") == 0) {
                    polkit.spawn(["/bin/sleep", "0.3"]);
                    return polkit.Result.YES;
                }
            });
            """
        let polkit = try PolkitHarness(bus: bus, rules: ["10-slow.rules": slowRule])
        defer { polkit.stop() }
        let harness = try DaemonHarness(
            config: staticConfig, files: ["geolocation": staticFile], polkit: true, bus: bus)
        try harness.startDaemon()
        defer { harness.stop() }
        let result = try polkit.run(
            Self.clients + [bus.address, Self.app + ".n{}", "burst", "50", "90"], timeout: 110)
        #expect(result.status == 0, "\(result.output.prefix(4000))\n\(harness.daemonLog.suffix(4000))")
        #expect(result.output.contains("served 50 of 50"), "\(result.output.prefix(4000))")
        #expect(!harness.daemonLog.contains("did not answer"), "\(harness.daemonLog.suffix(4000))")
    }

    @Test(.timeLimit(.minutes(2)))
    func aRuleChangeReachesTheNextDecisionAtOnce() async throws {
        let bus = try PolkitHarness.makeBus()
        let always = "io.github.whereabouts1.location-always"
        let polkit = try PolkitHarness(bus: bus, rules: ["10-test.rules": Self.rule("YES", action: always)])
        defer { polkit.stop() }
        let harness = try DaemonHarness(
            config: staticConfig, files: ["geolocation": staticFile], polkit: true, bus: bus)
        try harness.startDaemon()
        defer { harness.stop() }
        let cli = try ProjectPaths.product("whereabouts").path
        let check = { try polkit.run([cli, "authorise", "--check", "--desktop-id", Self.app]) }
        // Twice, so that the second is answered from the cache.
        for _ in 0..<2 {
            let status = try check()
            #expect(status.output.contains("authorisedAlways"), "\(status.output)\n\(harness.daemonLog)")
        }
        #expect(Self.checks(polkit, always) == 1, "\(polkit.log)")
        let loads = Self.ruleLoads(polkit)
        try polkit.setRules(["10-test.rules": Self.rule("NO", action: always)])
        try Wait.until("polkitd to reload its rules", timeout: 20) { Self.ruleLoads(polkit) > loads }
        // Well within the cache's 60 s: only polkit's Changed signal can have made the daemon ask again.
        let changedAt = ContinuousClock.now
        var last = ""
        try Wait.until("the new rule to decide", timeout: 10) {
            last = try check().output
            return !last.contains("authorisedAlways")
        }
        #expect(ContinuousClock.now - changedAt < .seconds(10))
        #expect(harness.daemonLog.contains("polkit: its policy changed"), "\(harness.daemonLog)")
        #expect(last.contains("restricted") || last.contains("notDetermined"), "\(last)")
        let located = try polkit.run([cli, "locate", "--desktop-id", Self.app])
        #expect(located.status != 0, "\(located.output)")
    }

    @Test(.timeLimit(.minutes(2)))
    func aSessionChangeReachesTheNextDecision() async throws {
        let bus = try PrivateBus(extraPolicy: PolkitHarness.busPolicy + "\n" + LogindMock.busPolicy)
        let whenInUse = "io.github.whereabouts1.location-when-in-use"
        let polkit = try PolkitHarness(bus: bus, rules: ["10-test.rules": Self.rule("YES", action: whenInUse)])
        defer { polkit.stop() }
        let logind = try LogindMock(bus: bus)
        defer { logind.stop() }
        try logind.addSession("c1", uid: 65534, user: "nobody", active: true)
        let harness = try DaemonHarness(
            config: staticConfig, files: ["geolocation": staticFile], polkit: true, bus: bus)
        try harness.startDaemon()
        defer { harness.stop() }
        let flags = polkit.directory.appendingPathComponent("flags-\(getpid())")
        try FileManager.default.createDirectory(at: flags, withIntermediateDirectories: true)
        let clients = try polkit.spawn([
            "/usr/bin/python3", Self.script.path, bus.address, Self.app, "steps", "3", flags.path,
        ])
        defer { clients.stop() }
        try logind.mapProcesses([clients.pid: "c1"])
        func step(_ number: Int) throws -> String {
            _ = FileManager.default.createFile(
                atPath: flags.appendingPathComponent("step-\(number)").path, contents: nil)
            var line = ""
            try Wait.until("step \(number) to be decided", timeout: 20) {
                line =
                    clients.log.split(separator: "\n").first { $0.hasPrefix("step \(number): ") }.map(String.init) ?? ""
                return !line.isEmpty
            }
            return line
        }
        let first = try step(1)
        #expect(first == "step 1: served", "\(first)\n\(harness.daemonLog)")
        try logind.setActive("c1", false)
        try Wait.until("the daemon to see the session inactive", timeout: 10) {
            harness.daemonLog.contains("is inactive")
        }
        let second = try step(2)
        #expect(second.hasPrefix("step 2: refused"), "\(second)\n\(harness.daemonLog)")
        try logind.setActive("c1", true)
        try Wait.until("the daemon to see the session active", timeout: 10) {
            harness.daemonLog.contains("c1 is active")
        }
        let third = try step(3)
        #expect(third == "step 3: served", "\(third)\n\(harness.daemonLog)")
    }
}
