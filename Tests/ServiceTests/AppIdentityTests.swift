import Foundation
import TestBasics
import TestSupport
import Testing

/// Who is asking, end to end: apps in real `bwrap` sandboxes placed in cgroups named as Flatpak names them (in
/// every systemd hierarchy of the machine: v2 and `name=systemd` on a hybrid one), the daemon running as the
/// package's unprivileged `whereabouts` user with the package's bus and polkit policy, a real polkitd that
/// challenges every app of `nobody` (so only a stored decision authorises one).
@Suite("App identity from the sandbox, end to end", .serialized)
struct AppIdentityTests {
    nonisolated static let maps = "org.example.Maps"
    nonisolated static let notes = "org.example.Notes"
    nonisolated static let other = "org.example.Other"

    /// polkitd, and whereaboutsd as `whereabouts` asking it, with the static source and two stored decisions of
    /// `nobody`: *always* for the verified Flatpak app Maps, *always* for the claimed id Notes.
    struct Setup {
        let polkit: PolkitHarness
        let harness: DaemonHarness
        let nobody: UInt32

        init() throws {
            guard getpwnam("whereabouts") != nil else {
                throw TestEnvironmentError(
                    "no 'whereabouts' system user, which the package makes; run the test command from the README")
            }
            nobody = try #require(getpwnam("nobody")?.pointee.pw_uid)
            let bus = try PolkitHarness.makeBus()
            polkit = try PolkitHarness(
                bus: bus,
                rules: [
                    "10-test.rules": """
                    polkit.addRule(function(action, subject) {
                        if (action.id.indexOf("io.github.whereabouts1.location") == 0 && subject.user == "nobody") {
                            return polkit.Result.AUTH_SELF;
                        }
                    });
                    """
                ])
            let grants =
                "# whereabouts grants 2\n\(nobody)\t\(AppIdentityTests.maps)\talways\tprecise\tverified\n"
                + "\(nobody)\t\(AppIdentityTests.notes)\talways\tprecise\n"
            harness = try DaemonHarness(
                config: staticConfig, files: ["geolocation": staticFile, "grants": grants], polkit: true, bus: bus)
            // The daemon keeps its state in the harness folder, as in /var/lib/whereabouts.
            let user = try #require(getpwnam("whereabouts")?.pointee)
            guard chown(harness.directory.path, user.pw_uid, user.pw_gid) == 0,
                chown(harness.file("grants").path, user.pw_uid, user.pw_gid) == 0
            else { throw TestEnvironmentError("cannot give the harness folder to whereabouts: errno \(errno)") }
            try harness.startDaemon(launcher: try Unprivileged.prefix(asUser: "whereabouts"))
        }

        /// `identity_client.py` with `steps`, as `nobody`, after `launcher` (a cgroup's), under `sandbox`'s
        /// `bwrap` when given, with `environment` added to the bus's, its output.
        func client(
            desktopId: String, _ steps: [String], cgroup: UnitCgroup? = nil, sandbox: String? = nil,
            environment: [String: String] = [:]
        ) throws -> String {
            let script = ProjectPaths.clients.appendingPathComponent("identity_client.py").path
            let arguments = [script, harness.bus.address, desktopId] + steps
            var command: [String]
            if let sandbox {
                command = try FlatpakSandbox.command(
                    ["/usr/bin/python3"] + arguments, asUser: "nobody",
                    infoFile: try FlatpakSandbox.infoFile(sandbox, in: harness.directory), shared: [harness.directory],
                    readOnly: [ProjectPaths.clients])
            } else {
                command = try Unprivileged.prefix(asUser: "nobody") + ["/usr/bin/python3"] + arguments
            }
            command = (cgroup?.launcher ?? []) + command
            let result = try Unprivileged.run(
                command, asUser: nil, environment: harness.bus.environment.merging(environment) { $1 },
                in: harness.directory, timeout: 30)
            return result.output
        }

        /// `identity_client.py` with `steps` as `nobody`, its connecting process leaving the connection to a child
        /// and exiting at once; the child's output, once it printed `lines` lines.
        func orphanedClient(desktopId: String, _ steps: [String], lines: Int) throws -> String {
            let script = ProjectPaths.clients.appendingPathComponent("identity_client.py").path
            let process = try Unprivileged.spawn(
                ["/usr/bin/python3", script, harness.bus.address, desktopId] + steps, asUser: "nobody",
                environment: harness.bus.environment.merging(["IDENTITY_CLIENT_ORPHAN": "1"]) { $1 },
                in: harness.directory)
            // Reaped, the process that connected is gone for good (a zombie still has its /proc entry).
            _ = try process.wait(timeout: 10)
            try Wait.until("the orphaned client's \(lines) lines", timeout: 30) {
                process.log.split(separator: "\n").count >= lines
            }
            return process.log
        }

        func stop() {
            harness.stop()
            polkit.stop()
        }
    }

    /// The cgroup of `unit` in the app slice of `uid`'s manager.
    static func scope(_ uid: UInt32, _ unit: String) throws -> UnitCgroup {
        try UnitCgroup(path: UnitCgroup.userUnitPath(uid: uid, slice: "app.slice", unit: unit))
    }

    @Test func aFlatpakAppIsItsSandboxesAppWhateverItsDesktopIdSays() throws {
        let setup = try Setup()
        defer { setup.stop() }
        let scope = try Self.scope(setup.nobody, UnitCgroup.flatpakScopeName(appID: Self.maps, number: 4242))
        defer { scope.remove() }
        let output = try setup.client(
            desktopId: Self.notes, ["identity", "desktop-id", "check", "locate", "agent"], cgroup: scope,
            sandbox: Self.maps)
        let lines = output.split(separator: "\n").map(String.init)
        // The daemon runs as the package runs it, unprivileged.
        let daemon = try #require(setup.harness.daemon?.pid)
        let status = try String(contentsOfFile: "/proc/\(daemon)/status", encoding: .utf8)
        let whereabouts = try #require(getpwnam("whereabouts")?.pointee.pw_uid)
        #expect(status.contains("\nUid:\t\(whereabouts)\t\(whereabouts)\t"), "\(status)")
        #expect(lines.count == 5, "\(output)\n\(setup.harness.daemonLog)")
        #expect(lines.first == "identity flatpak:\(Self.maps) hint \(Self.maps)", "\(output)")
        // GeoClue's rule: the property stays as the app wrote it.
        #expect(lines.dropFirst(1).first == "desktop-id \(Self.notes)", "\(output)")
        // Maps' verified grant serves it; Notes' claimed one would have too, so the verified one is what counts.
        #expect(lines.dropFirst(2).first == "status authorisedAlways", "\(output)")
        #expect(lines.dropFirst(3).first == "fix 48.858400 2.294500", "\(output)\n\(setup.harness.daemonLog)")
        let agent = lines.dropFirst(4).first ?? ""
        #expect(agent.hasPrefix("refused org.freedesktop.DBus.Error.AccessDenied: "), "\(output)")
        #expect(agent.contains("flatpak:\(Self.maps) is sandboxed and may not act as an agent"), "\(output)")
        // As in GeoClue, a Flatpak app need not set DesktopId at all.
        let unnamed = try setup.client(desktopId: "-", ["identity", "locate"], cgroup: scope, sandbox: Self.maps)
        #expect(
            unnamed == "identity flatpak:\(Self.maps) hint \(Self.maps)\nfix 48.858400 2.294500\n", "\(unnamed)")
    }

    @Test func anUnsandboxedCallerCannotUseAFlatpakAppsVerifiedGrant() throws {
        let setup = try Setup()
        defer { setup.stop() }
        let output = try setup.client(desktopId: Self.maps, ["identity", "check", "locate"])
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines.first == "identity claimed:\(Self.maps) hint -", "\(output)")
        #expect(lines.dropFirst().first == "status notDetermined", "\(output)\n\(setup.harness.daemonLog)")
        #expect(
            lines.dropFirst(2).first?.hasPrefix("refused org.freedesktop.DBus.Error.AccessDenied: ") == true,
            "\(output)")
        // What it claims stays its own: a claimed grant of the id it names does serve it.
        let notes = try setup.client(desktopId: Self.notes, ["identity", "check"])
        #expect(notes == "identity claimed:\(Self.notes) hint -\nstatus authorisedAlways\n", "\(notes)")
    }

    @Test func aFlatpakAppCannotUseTheGrantOfAnIdItClaims() throws {
        let setup = try Setup()
        defer { setup.stop() }
        let scope = try Self.scope(setup.nobody, UnitCgroup.flatpakScopeName(appID: Self.other, number: 7))
        defer { scope.remove() }
        let output = try setup.client(
            desktopId: Self.notes, ["identity", "check", "locate"], cgroup: scope, sandbox: Self.other)
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines.first == "identity flatpak:\(Self.other) hint \(Self.other)", "\(output)")
        #expect(lines.dropFirst().first == "status notDetermined", "\(output)")
        #expect(lines.dropFirst(2).first?.hasPrefix("refused") == true, "\(output)")
    }

    @Test func aScopeNamingNoValidApplicationIDIsRefusedWithItsReason() throws {
        let setup = try Setup()
        defer { setup.stop() }
        let scope = try Self.scope(setup.nobody, "app-flatpak-notanid-7.scope")
        defer { scope.remove() }
        let output = try setup.client(
            desktopId: Self.notes, ["identity", "check", "locate"], cgroup: scope, sandbox: "org.example.Whatever")
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines.first == "identity - hint -", "\(output)")
        let reason =
            "cannot tell which app the caller is: the Flatpak scope 'app-flatpak-notanid-7.scope' names "
            + "'notanid', which is not a valid application id"
        #expect(lines.dropFirst().first == "refused org.freedesktop.DBus.Error.AccessDenied: \(reason)", "\(output)")
        #expect(lines.dropFirst(2).first == "refused org.freedesktop.DBus.Error.AccessDenied: \(reason)", "\(output)")
        #expect(setup.harness.daemonLog.contains("is: the Flatpak scope 'app-flatpak-notanid-7.scope'"))
    }

    @Test func theCLIShowsWhoItIsTakenForAndWhichGrantsAreVerified() throws {
        let setup = try Setup()
        defer { setup.stop() }
        // An app a desktop launched, in the user unit named after its desktop file: a hint, and still a claim.
        let unit = try Self.scope(setup.nobody, "app-gnome-org.example.Notes-3.scope")
        defer { unit.remove() }
        let cli = try ProjectPaths.product("whereabouts").path
        let status = try Unprivileged.run(
            unit.launcher + (try Unprivileged.prefix(asUser: "nobody")) + [cli, "status", "--desktop-id", Self.notes],
            asUser: nil, environment: setup.harness.bus.environment, in: setup.harness.directory)
        #expect(
            status.output.contains(
                "this process: claimed:\(Self.notes) (claimed, not verified; its unit is named after \(Self.notes).desktop)\n"
            ),
            "\(status.output)")
        let grants = try Unprivileged.run(
            [cli, "grants", "--desktop-id", Self.notes], environment: setup.harness.bus.environment,
            in: setup.harness.directory)
        #expect(
            grants.output
                == "\(setup.nobody)\t\(Self.maps)\talways\tverified\n\(setup.nobody)\t\(Self.notes)\talways\n",
            "\(grants.output)")
    }

    @Test func aProcessThatMayNotDumpCoreIsStillItsOwnUsers() throws {
        let setup = try Setup()
        defer { setup.stop() }
        // Its /proc files are root's then; the service takes the user from the /proc/PID folder, which stays the
        // process's effective user's, and serves it as nobody's claimed Notes, whose grant is nobody's.
        let output = try setup.client(
            desktopId: Self.notes, ["identity", "check", "locate"], environment: ["IDENTITY_CLIENT_UNDUMPABLE": "1"])
        let lines = output.split(separator: "\n").map(String.init)
        #expect(
            lines.prefix(3) == ["undumpable", "identity claimed:\(Self.notes) hint -", "status authorisedAlways"],
            "\(output)")
        #expect(lines.count == 4 && lines[3].hasPrefix("fix "), "\(output)")
    }

    @Test func aProcessGoneBeforeItIsReadIsRefusedNotTakenForUnsandboxed() throws {
        let setup = try Setup()
        defer { setup.stop() }
        // The process that connected leaves its connection to a child and exits before the first call.
        let output = try setup.orphanedClient(desktopId: Self.notes, ["identity", "check", "locate"], lines: 3)
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines.first == "identity - hint -", "\(output)")
        for line in lines.dropFirst() {
            #expect(
                line.hasPrefix("refused org.freedesktop.DBus.Error.AccessDenied: cannot tell which app"), "\(output)")
            #expect(line.hasSuffix("is gone"), "\(output)")
        }
        #expect(lines.count == 3, "\(output)")
    }
}
