import DBus
import Foundation
import Glibc
import Loop
import TestSupport
import Testing

/// The record of location use end to end: each user's own, read by that user alone through the CLI run as
/// unprivileged users against the daemon with polkitd; kept across a restart; cleared on request; and a lookup
/// to the loopback Ichnaea server recorded with its host and counts, never what it sent.
@Suite("The record of location use, end to end", .serialized)
struct HistoryEndToEndTests {
    static let nobodyApp = "org.example.Nobody"
    static let daemonApp = "org.example.Daemon"

    /// `whereabouts ARGUMENTS` as `user`: its exit status and output.
    static func cli(_ polkit: PolkitHarness, _ arguments: [String], as user: String) throws -> (Int32, String) {
        let result = try polkit.run([try ProjectPaths.product("whereabouts").path] + arguments, asUser: user)
        return (result.status, result.output)
    }

    @Test(.timeLimit(.minutes(3)))
    func aUsersRecordIsTheirsAloneSurvivesARestartAndIsCleared() async throws {
        let (bus, polkit, harness) = try PolkitLoadTests.daemon(rule: RegionStoreLimitsTests.rule)
        defer {
            harness.stop()
            polkit.stop()
        }
        let nobody = try #require(getpwnam("nobody")?.pointee.pw_uid)
        let victim = try #require(getpwnam("daemon")?.pointee.pw_uid)
        for (user, app) in [("nobody", Self.nobodyApp), ("daemon", Self.daemonApp)] {
            let (status, output) = try Self.cli(polkit, ["locate", "--desktop-id", app], as: user)
            #expect(status == 0, "\(output)\n\(harness.daemonLog.suffix(2000))")
        }
        // Each sees its own use, and only its own.
        let (ownStatus, own) = try Self.cli(polkit, ["history", "--json"], as: "nobody")
        #expect(
            own.contains("\"app\":\"claimed:\(Self.nobodyApp)\""),
            "\(ownStatus) \(own)\n\(harness.daemonLog.suffix(3000))")
        #expect(own.contains("\"uid\":\(nobody)") && own.contains("\"providers\":[\"static\"]"), "\(own)")
        #expect(!own.contains(Self.daemonApp), "\(own)")
        let (_, theirs) = try Self.cli(polkit, ["history"], as: "daemon")
        #expect(theirs.contains("claimed:\(Self.daemonApp)\texact") && !theirs.contains(Self.nobodyApp), "\(theirs)")
        // Everyone's, or another's to clear, needs the management action, which polkit refuses nobody here.
        let (allStatus, all) = try Self.cli(polkit, ["history", "--all"], as: "nobody")
        #expect(
            allStatus != 0 && all.contains("io.github.whereabouts1.manage") && !all.contains(Self.daemonApp),
            "\(allStatus) \(all)")
        let (clearStatus, _) = try Self.cli(polkit, ["history", "--clear", "--uid", "\(victim)"], as: "nobody")
        #expect(clearStatus != 0)

        // A use going on is listed as such.
        let holder = try polkit.spawn(
            [
                "/usr/bin/python3", RegionStoreLimitsTests.script.path, bus.address, "\(Self.nobodyApp).Held",
                "active-apps",
            ])
        try Wait.until("the held client's first fix", timeout: 30) { holder.log.contains("ready") }
        let (_, during) = try Self.cli(polkit, ["history"], as: "nobody")
        #expect(during.contains("now (going on)\tclaimed:\(Self.nobodyApp).Held"), "\(during)")
        holder.stop()

        // Kept across a restart, in a file of the user's readable by the service alone.
        harness.daemon?.stop(grace: 10)
        let file = harness.directory.appendingPathComponent("history.d/\(nobody)").path
        var status = stat()
        #expect(stat(file, &status) == 0 && status.st_mode & 0o777 == 0o600, "\(harness.daemonLog.suffix(2000))")
        try harness.startDaemon()
        let (_, after) = try Self.cli(polkit, ["history"], as: "nobody")
        #expect(after.contains("claimed:\(Self.nobodyApp)\texact"), "\(after)")
        #expect(
            after.contains("claimed:\(Self.nobodyApp).Held\texact"), "the held use, ended with its connection: \(after)"
        )

        // Cleared: nobody's record is gone, on disk too; the other user's stays.
        let (cleared, _) = try Self.cli(polkit, ["history", "--clear"], as: "nobody")
        #expect(cleared == 0)
        let (_, empty) = try Self.cli(polkit, ["history"], as: "nobody")
        #expect(empty.isEmpty, "\(empty)")
        try Wait.until("the cleared file to go", timeout: 10) { access(file, F_OK) != 0 }
        let (_, kept) = try Self.cli(polkit, ["history"], as: "daemon")
        #expect(kept.contains(Self.daemonApp), "\(kept)")
        #expect(!harness.daemonLog.contains("moved it to"), "\(harness.daemonLog.suffix(2000))")
    }

    @Test(.timeLimit(.minutes(2)))
    @BusActor
    func aLookupIsRecordedWithItsHostAndCountsButNothingItSent() async throws {
        let rig = try await NetworkPositioningRig.make()
        defer { rig.stop() }
        try await rig.launch()
        let app = try await rig.streetClient()
        let requests = try rig.server.requests
        try #require(requests.count >= 1, "\(requests)")
        let reply = try await app.call(
            GeoClueTestClient.managerPath, "io.github.whereabouts1.Manager", "GetHistory",
            [.boolean(false), .uint64(0)])
        app.close()
        let lookups = reply[1].elements ?? []
        let first = try #require(lookups.first?.fields, "\(reply)")
        let host = URLComponents(string: rig.server.url())?.host ?? "?"
        #expect(first[0] == .uint32(0) && first[2] == .string("wifi") && first[3] == .string(host), "\(first)")
        #expect(first[4] == .uint32(3) && first[5] == .uint32(0), "the usable access points, no cell: \(first)")
        #expect(first[6] == .string("position") && first[7] == .double(42), "\(first)")
        #expect(first[8] == .strings(["claimed:whereabouts-test"]), "\(first)")
        let text = "\(reply)"
        #expect(!text.contains("00:11:22") && !text.contains("52.51") && !text.contains("13.37"), "\(text)")

        // The app's use ends with its connection, and the file holds it, with nothing of what was sent either.
        rig.harness.daemon?.stop(grace: 10)
        let written = try String(contentsOf: rig.harness.file("history.d/0"), encoding: .utf8)
        #expect(written.contains("\twifi\t\(host)\t3\t0\tposition\t42.0\tclaimed:whereabouts-test\n"), "\(written)")
        #expect(written.contains("use\t") && written.contains("\tclaimed:whereabouts-test\t6\texact\twifi\n"))
        #expect(!written.contains("00:11:22") && !written.contains("52.51"), "\(written)")
    }

    /// An app's clients that overlap are one use, from the first's start to the last's end; another app's client,
    /// and the same app's client after them, are uses of their own.
    @Test(.timeLimit(.minutes(2)))
    @BusActor
    func overlappingClientsOfOneAppAreOneUse() async throws {
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        try await Self.start(harness)
        var apps: [GeoClueTestClient] = []
        for desktopId in ["org.example.Tabs", "org.example.Tabs", "org.example.Tabs", "org.example.Other"] {
            let app = try await GeoClueTestClient(bus: harness.bus)
            _ = try await app.startedClient(desktopId: desktopId, level: 8)
            _ = try await app.waitForUpdates(1)
            apps.append(app)
        }
        for app in apps { app.close() }
        let later = try await GeoClueTestClient(bus: harness.bus)
        defer { later.close() }
        _ = try await later.startedClient(desktopId: "org.example.Tabs", level: 8)
        _ = try await later.waitForUpdates(1)
        let reply = try await later.call(
            GeoClueTestClient.managerPath, "io.github.whereabouts1.Manager", "GetHistory",
            [.boolean(false), .uint64(0)])
        let uses = (reply[0].elements ?? []).compactMap { $0.fields }
        let tabs = uses.filter { $0[1] == .string("claimed:org.example.Tabs") }
        #expect(tabs.count == 2, "one use for the three clients together, one going on: \(uses)")
        #expect(tabs.filter { $0[3] == .uint64(0) }.count == 1, "the later client's use goes on: \(uses)")
        #expect(uses.filter { $0[1] == .string("claimed:org.example.Other") }.count == 1, "\(uses)")
    }

    @concurrent
    private static func start(_ harness: DaemonHarness) async throws { try harness.startDaemon() }
}
