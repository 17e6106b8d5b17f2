import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

/// What one local user can do to everyone, tried as unprivileged users (`nobody` and `daemon`) against the real
/// daemon on a private bus with polkitd (`Tests/Clients/local_user.py`): Introspect shows another user nothing of
/// theirs, held calls are limited per connection and per user, a connection's clients are dropped in work linear
/// in their number, and `ActiveApps` shows a user its own apps only and is not broadcast.
@Suite("What one local user can do to everyone", .serialized)
struct LocalUserLimitsTests {
    nonisolated static let app = PolkitLoadTests.app
    static let script = ProjectPaths.clients.appendingPathComponent("local_user.py")
    static let clientRoot = "/org/freedesktop/GeoClue2/Client"

    /// Runs `local_user.py MODE ARGUMENTS` as `nobody` and returns it once it printed "ready".
    static func attacker(_ polkit: PolkitHarness, _ bus: PrivateBus, _ arguments: [String], timeout: Double = 120)
        throws -> ChildProcess
    {
        let process = try polkit.spawn(["/usr/bin/python3", script.path, bus.address, app] + arguments)
        // At a lower priority, as the bus, polkitd and the daemon of these tests are, so that the suites running
        // beside them keep their timing.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(process.pid), 10)
        try Wait.until("local_user.py \(arguments.joined(separator: " ")) to be ready", timeout: timeout) {
            guard process.isRunning else { throw TestEnvironmentError("local_user.py exited:\n\(process.log)") }
            return process.log.contains("\nready") || process.log.hasPrefix("ready")
        }
        return process
    }

    /// The value printed after `key` on a line of its own.
    static func printed(_ key: String, in log: String) -> String? {
        log.split(separator: "\n").first { $0.hasPrefix(key + " ") }.map { String($0.dropFirst(key.count + 1)) }
    }

    /// `Introspect` of `path` as the Unix user `user`, through busctl: the XML, escaped as busctl prints it.
    static func introspect(_ harness: DaemonHarness, _ path: String, asUser user: String) throws -> String {
        let result = try harness.busctl(
            ["call", "org.freedesktop.GeoClue2", path, "org.freedesktop.DBus.Introspectable", "Introspect"],
            asUser: user)
        #expect(result.status == 0, "Introspect \(path) as \(user): \(result.output)")
        return result.output
    }

    /// The daemon's CPU time so far in nanoseconds, all threads, from the scheduler's statistics.
    static func cpuNanoseconds(_ process: ChildProcess) -> UInt64 {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.pid)/task")) ?? []
        return tasks.reduce(0) { total, task in
            let text =
                (try? String(contentsOfFile: "/proc/\(process.pid)/task/\(task)/schedstat", encoding: .utf8)) ?? ""
            return total + (UInt64(text.split(separator: " ").first ?? "") ?? 0)
        }
    }

    /// A private bus with polkitd saying yes to *always* for `nobody`'s test app, and the daemon with no provider,
    /// so that no fix ever comes; all at lowered priority.
    static func daemonWithoutFixes() throws -> (PrivateBus, PolkitHarness, DaemonHarness) {
        let (bus, polkit, harness) = try PolkitLoadTests.daemon(
            rule: PolkitLoadTests.rule("YES", action: "io.github.whereabouts1.location-always"), config: "", files: [:])
        PolkitLoadTests.lowerPriority(bus, polkit, harness)
        return (bus, polkit, harness)
    }

    @Test(.timeLimit(.minutes(3)))
    func introspectionShowsAnotherUserNoneOfAUsersClients() async throws {
        let (bus, polkit, harness) = try PolkitLoadTests.daemonWithAlwaysYes()
        defer {
            harness.stop()
            polkit.stop()
        }
        let paths = ["/", "/org/freedesktop/GeoClue2", Self.clientRoot]
        let before = try paths.map { try Self.introspect(harness, $0, asUser: "daemon") }
        let attacker = try Self.attacker(polkit, bus, ["hold", "2000"])
        defer { attacker.stop() }
        let client = try #require(Self.printed("client", in: attacker.log), "\(attacker.log)")
        let location = try #require(Self.printed("location", in: attacker.log), "\(attacker.log)")
        #expect(Self.printed("own-children", in: attacker.log) == "2000", "the owner sees its own: \(attacker.log)")
        let after = try paths.map { try Self.introspect(harness, $0, asUser: "daemon") }
        for (index, path) in paths.enumerated() {
            #expect(after[index] == before[index], "Introspect \(path) changed for another user")
        }
        #expect(!after[1].contains("Client"), "\(after[1])")
        for path in [client, client + "/Location", location] {
            let node = try Self.introspect(harness, path, asUser: "daemon")
            #expect(!node.contains("<interface") && !node.contains("<node name="), "\(path): \(node)")
        }
        // Visibility is per connection, as access is: another connection of the same user sees nothing either.
        let sameUser = try Self.introspect(harness, client, asUser: "nobody")
        #expect(!sameUser.contains("<interface"), "\(sameUser)")
    }

    /// Those who administer the service see the whole tree, as everyone does with GeoClue: `busctl tree` as root, and
    /// as a user polkit grants `io.github.whereabouts1.manage`, lists another connection's client, and `busctl
    /// introspect` shows it (its properties' values left out, as GeoClue leaves them out for a non-owner); another
    /// user still sees nothing of it.
    @Test(.timeLimit(.minutes(3)))
    func administratorsSeeEveryConnectionsClients() async throws {
        let manageForDaemon = """
            polkit.addRule(function(action, subject) {
                if (action.id == "io.github.whereabouts1.manage" && subject.user == "daemon") {
                    return polkit.Result.YES;
                }
            });
            """
        let (bus, polkit, harness) = try PolkitLoadTests.daemon(
            rule: PolkitLoadTests.rule("YES", action: "io.github.whereabouts1.location-always") + manageForDaemon)
        PolkitLoadTests.lowerPriority(bus, polkit, harness)
        defer {
            harness.stop()
            polkit.stop()
        }
        let holder = try Self.attacker(polkit, bus, ["hold", "1"])
        defer { holder.stop() }
        let client = try #require(Self.printed("client", in: holder.log), "\(holder.log)")
        for user in ["root", "daemon"] {
            let tree = try harness.busctl(["tree", "org.freedesktop.GeoClue2"], asUser: user == "root" ? nil : user)
            #expect(tree.status == 0 && tree.output.contains(client), "busctl tree as \(user): \(tree.output)")
            let node = try harness.busctl(
                ["introspect", "org.freedesktop.GeoClue2", client], asUser: user == "root" ? nil : user)
            #expect(
                node.status == 0 && node.output.contains("org.freedesktop.GeoClue2.Client")
                    && node.output.contains(".DesktopId"), "busctl introspect as \(user): \(node.output)")
        }
        let stranger = try harness.busctl(["tree", "org.freedesktop.GeoClue2"], asUser: "www-data")
        #expect(stranger.status == 0 && !stranger.output.contains(client), "\(stranger.output)")
        // Seeing is not reading: a property of another connection's client is still refused, as with GeoClue.
        let read = try harness.busctl(
            ["get-property", "org.freedesktop.GeoClue2", client, "org.freedesktop.GeoClue2.Client", "Active"])
        #expect(read.status != 0 && read.output.contains("Access denied"), "\(read.output)")
    }

    @Test(.timeLimit(.minutes(4)))
    func queuedRequestsAreLimitedPerConnectionAndPerUser() async throws {
        let (bus, polkit, harness) = try Self.daemonWithoutFixes()
        defer {
            harness.stop()
            polkit.stop()
        }
        let daemon = try #require(harness.daemon)
        let idle = FaultInjectionTests.residentKiB(daemon)
        let one = try Self.attacker(polkit, bus, ["requests", "1", "300"])
        #expect(Self.printed("waiting", in: one.log) == "256", "\(one.log)\n\(harness.daemonLog.suffix(2000))")
        #expect(Self.printed("refused-connection", in: one.log) == "44", "\(one.log)")
        #expect(Self.printed("other", in: one.log) == "0", "\(one.log)")
        one.stop()

        let many = try Self.attacker(polkit, bus, ["requests", "17", "250"], timeout: 200)
        defer { many.stop() }
        #expect(Self.printed("waiting", in: many.log) == "4096", "\(many.log)\n\(harness.daemonLog.suffix(2000))")
        #expect(Self.printed("refused-user", in: many.log) == "154", "\(many.log)")
        #expect(Self.printed("other", in: many.log) == "0", "\(many.log)")
        let full = FaultInjectionTests.residentKiB(daemon)
        print(
            "local user limits: resident \(idle) KiB idle, \(full) KiB with 4096 requests held (\((full - idle) * 1024 / 4096) bytes a request)"
        )
        // Another user is still served: a fresh GetClient of root's is answered.
        let probe = try await GeoClueTestClient(bus: bus)
        _ = try await probe.getClient()
        await probe.close()
        #expect(daemon.isRunning)
    }

    @Test(.timeLimit(.minutes(4))) @BusActor
    func droppingAConnectionsClientsCostsWorkLinearInTheirNumber() async throws {
        let (bus, polkit, harness) = try PolkitLoadTests.daemonWithAlwaysYes()
        defer {
            harness.stop()
            polkit.stop()
        }
        let daemon = try #require(harness.daemon)
        let probe = try await GeoClueTestClient(bus: bus)
        defer { probe.close() }
        var peak = 0
        /// The daemon's CPU time spent dropping `count` clients of a connection that goes.
        func dropCost(_ count: Int) async throws -> UInt64 {
            let attacker = try Self.attacker(polkit, bus, ["hold", String(count)])
            #expect(Self.printed("own-children", in: attacker.log) == String(count), "\(attacker.log)")
            let held = try #require(
                Self.printed("client", in: attacker.log).flatMap { ObjectPath($0) }, "\(attacker.log)")
            try await Task.sleep(for: .milliseconds(300))
            peak = max(peak, FaultInjectionTests.residentKiB(daemon))
            let start = Self.cpuNanoseconds(daemon)
            attacker.signal(SIGKILL)
            _ = try? attacker.wait(timeout: 10)
            // A connection's clients are dropped together: once one of them is gone from the bus, all are. Another
            // user is refused the client while it exists, and told it does not exist once it is gone.
            let deadline = ContinuousClock.now + .seconds(60)
            while true {
                do {
                    _ = try await probe.get(held, GeoClueTestClient.clientInterface, "Active")
                    Issue.record("root could read nobody's \(held)")
                    break
                } catch {
                    guard error.name == DBusError.Name.accessDenied else {
                        #expect(error.name == DBusError.Name.unknownMethod, "\(error)")
                        break
                    }
                }
                guard ContinuousClock.now < deadline else {
                    throw TestEnvironmentError("the daemon never dropped the \(count) clients")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            _ = try await probe.createClient()
            return Self.cpuNanoseconds(daemon) - start
        }
        let idle = FaultInjectionTests.residentKiB(daemon)
        let small = try await dropCost(1024)
        let large = try await dropCost(4096)
        print("local user limits: dropping 1024 clients took \(small / 1000) µs of CPU, 4096 \(large / 1000) µs")
        // The daemon hands back what the clients used once they fell to half their peak and the bus has taken
        // what was sent (measured: a third of the growth returned, against a twenty-fifth without it).
        let highest = peak
        try await eventually("the dropped clients' memory to be handed back", timeout: .seconds(20)) {
            highest - FaultInjectionTests.residentKiB(daemon) >= (highest - idle) / 6
        }
        let after = FaultInjectionTests.residentKiB(daemon)
        print(
            "local user limits: resident \(idle) KiB before, \(peak) KiB with 4096 clients, \(after) KiB once they were dropped"
        )
        // Linear work grows four times for four times the clients; quadratic work would grow sixteen times.
        #expect(large < small * 8, "1024 clients: \(small) ns, 4096: \(large) ns")
        #expect(daemon.isRunning)
    }

    @Test(.timeLimit(.minutes(3))) @BusActor
    func activeAppsShowsACallerItsOwnUsersAppsAndIsNotBroadcast() async throws {
        let (bus, polkit, harness) = try PolkitLoadTests.daemonWithAlwaysYes()
        defer {
            harness.stop()
            polkit.stop()
        }
        // A connection that follows every broadcast signal and never reads ActiveApps.
        let bystander = try await GeoClueTestClient(bus: bus)
        defer { bystander.close() }
        let user = try Self.attacker(polkit, bus, ["active-apps"])
        defer { user.stop() }
        #expect(Self.printed("active-apps", in: user.log) == Self.app, "\(user.log)")
        let other = try harness.busctl(
            [
                "get-property", "org.freedesktop.GeoClue2", "/org/freedesktop/GeoClue2/Manager",
                "io.github.whereabouts1.Manager",
                "ActiveApps",
            ], asUser: "daemon")
        #expect(
            other.status == 0 && other.output.trimmingCharacters(in: .whitespacesAndNewlines) == "as 0",
            "\(other.output)")
        // root may see every user's apps.
        let root = try await GeoClueTestClient(bus: bus)
        defer { root.close() }
        let all = try await root.get(GeoClueTestClient.managerPath, "io.github.whereabouts1.Manager", "ActiveApps")
        #expect(all == .strings([Self.app]))
        user.stop()
        // The reader is told, alone, that the app stopped; the bystander hears nothing of ActiveApps.
        try await root.waitFor("root to hear ActiveApps empty") {
            root.signals.contains {
                $0.member == "PropertiesChanged" && $0.arguments()[1].stringKeyedEntries?["ActiveApps"] == .strings([])
            }
        }
        #expect(
            !bystander.signals.contains {
                $0.member == "PropertiesChanged" && $0.arguments()[1].stringKeyedEntries?["ActiveApps"] != nil
            })
    }
}
