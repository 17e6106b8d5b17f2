import DBus
import Foundation
import Loop
import TestSupport
import Testing

/// The daemon asking a real polkitd, with the project's policy and test rules, about apps run as `nobody`.
@Suite("Authorisation through a real polkitd, end to end")
struct PolkitAuthorisationTests {
    nonisolated static let app = "org.example.Navigator"

    /// polkitd with `rules`, and whereaboutsd asking it, with the static source.
    struct Setup {
        let polkit: PolkitHarness
        let harness: DaemonHarness

        init(rules: [String: String], grants: String? = nil, environment: [String: String] = [:]) throws {
            let bus = try PolkitHarness.makeBus()
            polkit = try PolkitHarness(bus: bus, rules: rules)
            var files = ["geolocation": staticFile]
            if let grants { files["grants"] = grants }
            harness = try DaemonHarness(config: staticConfig, files: files, polkit: true, bus: bus)
            try harness.startDaemon(environment: environment)
        }

        /// The shared libraries the daemon has mapped now.
        func daemonLibraries() throws -> String {
            let daemon = try #require(harness.daemon)
            // procfs files have no size, so the file is read to its end rather than by its length.
            let maps = try #require(FileHandle(forReadingAtPath: "/proc/\(daemon.pid)/maps"))
            defer { try? maps.close() }
            return String(decoding: try maps.readToEnd() ?? Data(), as: UTF8.self)
        }

        /// The CLI as the unprivileged `nobody`.
        func cli(_ arguments: [String]) throws -> CommandResult {
            try polkit.run(
                [try ProjectPaths.product("whereabouts").path] + arguments + [
                    "--desktop-id", PolkitAuthorisationTests.app,
                ])
        }

        func stop() {
            harness.stop()
            polkit.stop()
        }
    }

    /// A rule answering `result` for `action` (or every Whereabouts action) when nobody asks for the test app.
    static func rule(_ result: String, action: String? = nil) -> [String: String] {
        let actionTest =
            action.map { "action.id == \"\($0)\"" } ?? "action.id.indexOf(\"io.github.whereabouts1.\") == 0"
        return [
            "10-test.rules": """
            polkit.addRule(function(action, subject) {
                if (\(actionTest) && subject.user == "nobody" && action.lookup("app") == "\(app)") {
                    return polkit.Result.\(result);
                }
            });
            """
        ]
    }

    @Test func aRuleSayingYesAuthorisesAlways() async throws {
        let setup = try Setup(rules: Self.rule("YES"))
        defer { setup.stop() }
        let located = try setup.cli(["locate", "--json"])
        #expect(located.status == 0, "\(located.output)\n\(setup.harness.daemonLog)")
        #expect(located.output.contains("\"latitude\":48.8584"))
        let status = try setup.cli(["authorise", "--check"])
        #expect(status.output.contains("authorisedAlways"), "\(status.output)")
    }

    @Test func whenInUseAloneGivesWhenInUse() async throws {
        let setup = try Setup(rules: Self.rule("YES", action: "io.github.whereabouts1.location-when-in-use"))
        defer { setup.stop() }
        let status = try setup.cli(["authorise", "--check"])
        #expect(status.status == 0 && status.output.contains("authorisedWhenInUse"), "\(status.output)")
    }

    @Test func aRuleSayingNoRestrictsAndAskingChangesNothing() async throws {
        let setup = try Setup(rules: Self.rule("NO"))
        defer { setup.stop() }
        let located = try setup.cli(["locate"])
        #expect(located.status == 4, "\(located.output)")
        let asked = try setup.cli(["authorise", "--always"])
        #expect(asked.status == 4 && asked.output.contains("restricted"), "\(asked.output)")
        // No decision was stored: nobody's stored decisions (ListGrants) are none.
        let listed = try setup.cli(["grants"])
        #expect(listed.status == 0 && listed.output.isEmpty, "\(listed.output)")
    }

    @Test func theShippedDefaultsRestrictASessionlessCaller() async throws {
        let setup = try Setup(rules: [:])
        defer { setup.stop() }
        let status = try setup.cli(["authorise", "--check"])
        #expect(status.output.contains("restricted"), "\(status.output)")
        #expect(try setup.cli(["locate"]).status == 4)
    }

    @Test func aChallengeIsNotDeterminedAndAnUnansweredPromptIsStoredAsDenied() async throws {
        let setup = try Setup(rules: Self.rule("AUTH_SELF"))
        defer { setup.stop() }
        #expect(try setup.cli(["authorise", "--check"]).output.contains("notDetermined"))
        // No authentication agent runs, so the prompt cannot be answered: a refusal.
        let asked = try setup.cli(["authorise"])
        #expect(asked.status == 4 && asked.output.contains("denied"), "\(asked.output)\n\(setup.harness.daemonLog)")
        // The refusal is a stored decision, as ListGrants shows.
        let uid = try #require(getpwnam("nobody")?.pointee.pw_uid)
        let listed = try setup.cli(["grants"])
        #expect(listed.output == "\(uid)\t\(Self.app)\tdenied\n", "\(listed.output)")
        let grants = try String(contentsOf: setup.harness.file("grants"), encoding: .utf8)
        #expect(grants.contains("\t\(Self.app)\tdenied\t-"), "\(grants)")
        #expect(try setup.cli(["locate"]).status == 4)
    }

    @Test func aStoredGrantMeetsAChallengeAndSurvivesARestart() async throws {
        let uid = try #require(getpwnam("nobody")?.pointee.pw_uid)
        let setup = try Setup(
            rules: Self.rule("AUTH_SELF"), grants: "# whereabouts grants 1\n\(uid)\t\(Self.app)\talways\tprecise\n")
        defer { setup.stop() }
        #expect(try setup.cli(["authorise", "--check"]).output.contains("authorisedAlways"))
        let located = try setup.cli(["locate"])
        #expect(located.status == 0, "\(located.output)")
        setup.harness.daemon?.stop()
        try setup.harness.startDaemon()
        #expect(try setup.cli(["authorise", "--check"]).output.contains("authorisedAlways"))
    }

    @Test func anApproximateGrantGetsGridSnappedFixes() async throws {
        let uid = try #require(getpwnam("nobody")?.pointee.pw_uid)
        let setup = try Setup(
            rules: Self.rule("AUTH_SELF"), grants: "# whereabouts grants 1\n\(uid)\t\(Self.app)\talways\tapproximate\n")
        defer { setup.stop() }
        let located = try setup.cli(["locate", "--json"])
        #expect(located.status == 0, "\(located.output)")
        #expect(!located.output.contains("48.8584"))
        let object = try JSONSerialization.jsonObject(with: Data(located.output.utf8)) as? [String: Any]
        #expect((object?["horizontalAccuracy"] as? Double ?? 0) >= 15_000)
    }

    @Test func aCorruptGrantStoreIsMovedAsideAndFailsClosed() async throws {
        let setup = try Setup(rules: Self.rule("AUTH_SELF"), grants: "not a grants file\n")
        defer { setup.stop() }
        #expect(setup.harness.daemonLog.contains("moved it to"))
        #expect(try setup.cli(["authorise", "--check"]).output.contains("notDetermined"))
        let moved = try FileManager.default.contentsOfDirectory(atPath: setup.harness.directory.path)
            .filter { $0.hasPrefix("grants.corrupt-") }
        #expect(moved.count == 1)
    }

    @Test func libpolkitAndGLibAreLoadedAtTheFirstCheckOnly() async throws {
        let setup = try Setup(rules: Self.rule("YES"))
        defer { setup.stop() }
        let before = try setup.daemonLibraries()
        #expect(!before.contains("libpolkit-gobject-1") && !before.contains("libglib-2.0"), "\(before)")
        let located = try setup.cli(["locate"])
        #expect(located.status == 0, "\(located.output)\n\(setup.harness.daemonLog)")
        let after = try setup.daemonLibraries()
        #expect(after.contains("libpolkit-gobject-1") && after.contains("libgio-2.0"), "\(after)")
    }

    @Test func aLibpolkitThatCannotBeLoadedDeniesWithTheLoadersReason() async throws {
        // A file that is not a shared library, found first through LD_LIBRARY_PATH.
        let broken = try TemporaryDirectory.make(prefix: "whereabouts-broken-polkit")
        defer { try? FileManager.default.removeItem(at: broken) }
        try Data("not a library".utf8).write(to: broken.appendingPathComponent("libpolkit-gobject-1.so.0"))
        let setup = try Setup(rules: Self.rule("YES"), environment: ["LD_LIBRARY_PATH": broken.path])
        defer { setup.stop() }
        for _ in 1...2 {
            let denied = try setup.cli(["locate"])
            #expect(denied.status == 4, "\(denied.output)")
            #expect(denied.output.contains("cannot check authorisation"), "\(denied.output)")
        }
        #expect(setup.harness.daemonLog.contains("libpolkit-gobject-1.so.0"), "\(setup.harness.daemonLog)")
        #expect(setup.harness.daemon?.isRunning == true)
    }

    @Test func polkitGoneDeniesWithAClearErrorAndRecovers() async throws {
        let setup = try Setup(rules: Self.rule("YES"))
        defer { setup.stop() }
        #expect(try setup.cli(["locate"]).status == 0)
        setup.polkit.stop()
        let denied = try setup.cli(["locate"])
        #expect(denied.status == 4, "\(denied.output)")
        #expect(denied.output.contains("cannot check authorisation"), "\(denied.output)")
        try setup.polkit.restart()
        let again = try setup.cli(["locate"])
        #expect(again.status == 0, "\(again.output)\n\(setup.harness.daemonLog)")
    }

    @Test func revokingAGrantStopsAWatchingClientWithinASecond() async throws {
        let uid = try #require(getpwnam("nobody")?.pointee.pw_uid)
        let setup = try Setup(
            rules: Self.rule("AUTH_SELF"), grants: "# whereabouts grants 1\n\(uid)\t\(Self.app)\talways\tprecise\n")
        defer { setup.stop() }
        let watch = try setup.polkit.spawn([
            try ProjectPaths.product("whereabouts").path, "watch", "--desktop-id", Self.app,
        ])
        try Wait.until("the first fix", timeout: 15) { watch.log.contains("48.858400") }
        let listed = try setup.cli(["grants"])
        #expect(listed.output.contains("\(uid)\t\(Self.app)\talways"), "\(listed.output)")
        let others = try setup.cli(["grants", "--all"])
        #expect(others.status == 4, "listing everyone's grants needs the management action: \(others.output)")
        let began = ContinuousClock.now
        let revoked = try setup.cli(["revoke", Self.app])
        #expect(revoked.status == 0, "\(revoked.output)")
        // The watcher has no timeout of its own: only the revocation ends it.
        try Wait.until("the watching client to stop", timeout: 30) { !watch.isRunning }
        print("the watching client stopped \(ContinuousClock.now - began) after the revocation")
        #expect(watch.exitCode == 4, "\(watch.log)")
        let grants = try String(contentsOf: setup.harness.file("grants"), encoding: .utf8)
        #expect(!grants.contains(Self.app))
        #expect(try setup.cli(["authorise", "--check"]).output.contains("notDetermined"))
    }
}
