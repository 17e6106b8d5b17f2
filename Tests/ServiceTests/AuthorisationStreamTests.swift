import Foundation
import TestSupport
import Testing

/// The library's sequence of authorisation statuses, through `whereabouts authorise --check --watch` run as
/// `nobody` against a real polkitd.
@Suite("Authorisation status changes, end to end")
struct AuthorisationStreamTests {
    @Test func aRevokedGrantReachesTheStatusSequence() async throws {
        let app = PolkitAuthorisationTests.app
        let uid = try #require(getpwnam("nobody")?.pointee.pw_uid)
        let setup = try PolkitAuthorisationTests.Setup(
            rules: PolkitAuthorisationTests.rule("AUTH_SELF"),
            grants: "# whereabouts grants 1\n\(uid)\t\(app)\talways\tprecise\n")
        defer { setup.stop() }
        let watcher = try setup.polkit.spawn([
            try ProjectPaths.product("whereabouts").path, "authorise", "--check", "--watch", "--desktop-id", app,
        ])
        defer { watcher.stop() }
        try Wait.until("the first status", timeout: 15) { watcher.log.contains("authorisedAlways") }
        let revoked = try setup.cli(["revoke", app])
        #expect(revoked.status == 0, "\(revoked.output)")
        try Wait.until("the revocation to reach the sequence", timeout: 5) { watcher.log.contains("notDetermined") }
        #expect(watcher.log == "authorisedAlways\nnotDetermined\n", "\(watcher.log)")
        #expect(watcher.isRunning, "the sequence goes on after a change")
    }

    @Test func aDecisionMadeElsewhereReachesTheStatusSequence() async throws {
        let app = PolkitAuthorisationTests.app
        let setup = try PolkitAuthorisationTests.Setup(rules: PolkitAuthorisationTests.rule("AUTH_SELF"))
        defer { setup.stop() }
        let watcher = try setup.polkit.spawn([
            try ProjectPaths.product("whereabouts").path, "authorise", "--check", "--watch", "--desktop-id", app,
        ])
        defer { watcher.stop() }
        try Wait.until("the first status", timeout: 15) { watcher.log.contains("notDetermined") }
        // Nobody answers the prompt (there is no polkit agent), which is stored as a refusal.
        let asked = try setup.cli(["authorise"])
        #expect(asked.output.contains("denied"), "\(asked.output)")
        try Wait.until("the decision to reach the sequence", timeout: 5) { watcher.log.contains("denied") }
        #expect(watcher.log == "notDetermined\ndenied\n", "\(watcher.log)")
    }
}
