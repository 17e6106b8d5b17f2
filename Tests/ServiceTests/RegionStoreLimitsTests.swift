import Foundation
import Glibc
import TestSupport
import Testing

/// What one local user can do to everyone's regions, tried as unprivileged users (`nobody` floods, `daemon` is the
/// victim) against the daemon with polkitd: a user's regions over every app id it claims are bounded and refused
/// with LimitsExceeded before anything is kept, the flood neither rewrites nor costs the victim's regions across a
/// restart, and regions are watched whenever they exist, so the idle exit waits for them.
@Suite("Regions that hold: one local user against everyone's geofences", .serialized)
struct RegionStoreLimitsTests {
    static let script = ProjectPaths.clients.appendingPathComponent("local_user.py")
    static let flooder = "org.example.Flood"
    static let victim = "org.example.Victim"

    /// polkit says yes to *always* for the test apps of `nobody` and `daemon`.
    static let rule = """
        polkit.addRule(function(action, subject) {
            if (action.id == "io.github.whereabouts1.location-always"
                && (subject.user == "nobody" || subject.user == "daemon")
                && action.lookup("app").indexOf("org.example.") == 0) {
                return polkit.Result.YES;
            }
        });
        """

    /// `local_user.py MODE ARGUMENTS` for `app` as `user`, its output.
    static func run(_ polkit: PolkitHarness, _ bus: PrivateBus, user: String, app: String, _ arguments: [String])
        throws -> String
    {
        let result = try polkit.run(
            ["/usr/bin/python3", script.path, bus.address, app] + arguments, asUser: user, timeout: 300)
        #expect(result.status == 0, "\(arguments): \(result.output)")
        return result.output
    }

    /// The inode of the file at `path`, nil when there is none.
    static func inode(_ path: String) -> UInt64? {
        var status = stat()
        return stat(path, &status) == 0 ? UInt64(status.st_ino) : nil
    }

    @Test(.timeLimit(.minutes(5)))
    func oneUsersFloodIsBoundedAndCostsNoOtherUserTheirRegions() async throws {
        let (bus, polkit, harness) = try PolkitLoadTests.daemon(rule: Self.rule)
        defer {
            harness.stop()
            polkit.stop()
        }
        let victimUID = try #require(getpwnam("daemon")?.pointee.pw_uid)
        let added = try Self.run(polkit, bus, user: "daemon", app: Self.victim, ["regions", "5", "5", "8"])
        #expect(LocalUserLimitsTests.printed("added", in: added) == "5", "\(added)")
        let victimFile = harness.directory.appendingPathComponent("regions.d/\(victimUID)").path
        try Wait.until("the victim's file", timeout: 10) { Self.inode(victimFile) != nil }
        let victimInode = Self.inode(victimFile)

        // The flood: ids of 255 bytes, 1000 to an app, over as many app ids as it takes.
        let flood = try Self.run(polkit, bus, user: "nobody", app: Self.flooder, ["regions", "2100", "1000", "255"])
        #expect(LocalUserLimitsTests.printed("added", in: flood) == "2000", "\(flood)")
        let refused = try #require(LocalUserLimitsTests.printed("refused-limits", in: flood), "\(flood)")
        #expect(refused.hasPrefix("100 user 65534 already has 2000 regions of all apps"), "\(flood)")
        #expect(LocalUserLimitsTests.printed("other", in: flood) == "0 ", "\(flood)")
        // Only the flooder's file was written: the victim's is the same file.
        #expect(Self.inode(victimFile) == victimInode, "the victim's file was rewritten")
        let nobodyFile = harness.directory.appendingPathComponent("regions.d/65534").path
        try Wait.until("the flooder's file", timeout: 10) { Self.inode(nobodyFile) != nil }

        // A restart (the idle exit, a reboot) loses nobody's regions, the victim's least of all.
        harness.daemon?.stop(grace: 10)
        try harness.startDaemon()
        let listed = try Self.run(polkit, bus, user: "daemon", app: "\(Self.victim).0", ["list"])
        let ids = (0..<5).map { "\($0)-".padding(toLength: 8, withPad: "x", startingAt: 0) }
        #expect(LocalUserLimitsTests.printed("listed", in: listed) == ids.sorted().joined(separator: ","), "\(listed)")
        let again = try Self.run(polkit, bus, user: "nobody", app: Self.flooder, ["regions", "1", "1", "8"])
        #expect(
            LocalUserLimitsTests.printed("added", in: again) == "0",
            "the flooder's share holds across the restart: \(again)")
        #expect(!harness.daemonLog.contains("moved it to"), "\(harness.daemonLog.suffix(3000))")
    }

    @Test(.timeLimit(.minutes(3)))
    func theIdleExitWaitsWhileRegionsAreKept() async throws {
        let (bus, polkit, harness) = try PolkitLoadTests.daemon(rule: Self.rule)
        defer {
            harness.stop()
            polkit.stop()
        }
        harness.daemon?.stop(grace: 10)
        try harness.startDaemon(arguments: ["--config", harness.configFile.path, "--timeout", "1"])
        let daemon = try #require(harness.daemon)
        _ = try Self.run(polkit, bus, user: "daemon", app: Self.victim, ["regions", "1", "1", "8"])
        // The app is gone; with no region it would exit a second later. Three idle timeouts on, it watches on.
        try await Task.sleep(for: .seconds(3))
        #expect(daemon.isRunning, "exited with a region kept:\n\(harness.daemonLog.suffix(2000))")
        let removed = try Self.run(
            polkit, bus, user: "daemon", app: "\(Self.victim).0",
            ["remove", "0-".padding(toLength: 8, withPad: "x", startingAt: 0)])
        #expect(removed.contains("removed"), "\(removed)")
        try Wait.until("the idle exit once no region is kept", timeout: 20) { !daemon.isRunning }
        #expect(harness.daemonLog.contains("exiting"), "\(harness.daemonLog.suffix(2000))")
    }
}
