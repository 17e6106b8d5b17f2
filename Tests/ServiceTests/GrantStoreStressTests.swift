import DBus
import Foundation
import Glibc
import Loop
import TestSupport
import Testing

/// The daemon killed at random moments while it stores decisions: no confirmed decision is ever lost, and the
/// grants file always parses.
@Suite("Grant store under SIGKILL, end to end")
struct GrantStoreStressTests {
    static let kills = 100

    @Test func noConfirmedDecisionIsLostAcross100Kills() async throws {
        // AUTH_SELF with no authentication agent: every RequestAuthorisation ends in a stored refusal.
        let rules = [
            "10-test.rules": """
            polkit.addRule(function(action, subject) {
                if (action.id.indexOf("io.github.whereabouts1.") == 0 && subject.user == "nobody") {
                    return polkit.Result.AUTH_SELF;
                }
            });
            """
        ]
        let bus = try PolkitHarness.makeBus()
        let polkit = try PolkitHarness(bus: bus, rules: rules)
        let harness = try DaemonHarness(config: "[agent]\nwhitelist=gnome-shell\n", polkit: true, bus: bus)
        defer {
            harness.stop()
            polkit.stop()
        }
        let cli = try ProjectPaths.product("whereabouts").path
        var confirmed: [String] = []
        var generator = SystemRandomNumberGenerator()
        for round in 0..<Self.kills {
            try harness.startDaemon()
            // One unprivileged writer asking for a fresh app each time, until the daemon dies.
            let script = """
                i=0
                while [ $i -lt 200 ]; do
                    i=$((i + 1))
                    if out=$(\(cli) authorise --desktop-id app-\(round)-$i 2>&1); then :; fi
                    case "$out" in denied) echo "confirmed app-\(round)-$i" ;; esac
                done
                """
            let writer = try polkit.spawn(["/bin/sh", "-c", script])
            let delay = UInt32.random(in: 80_000...300_000, using: &generator)
            usleep(delay)
            harness.daemon?.signal(SIGKILL)
            _ = try? harness.daemon?.wait(timeout: 10)
            writer.signal(SIGKILL)
            _ = try? writer.wait(timeout: 10)
            confirmed += writer.log.split(separator: "\n").filter { $0.hasPrefix("confirmed ") }.map {
                String($0.dropFirst("confirmed ".count))
            }
            let text = (try? String(contentsOf: harness.file("grants"), encoding: .utf8)) ?? "# whereabouts grants 2\n"
            #expect(text.hasPrefix("# whereabouts grants 2\n"), "round \(round): \(text.prefix(200))")
            let stored = Set(
                text.split(separator: "\n").dropFirst().map { line in
                    String(line.split(separator: "\t", omittingEmptySubsequences: false)[1])
                })
            let lost = confirmed.filter { !stored.contains($0) }
            #expect(lost.isEmpty, "round \(round): lost \(lost.prefix(5))")
            if !lost.isEmpty { return }
        }
        #expect(
            confirmed.count >= Self.kills / 4,
            "only \(confirmed.count) decisions were confirmed in \(Self.kills) rounds")
        print("grant store: \(Self.kills) kills, \(confirmed.count) confirmed decisions, none lost")
    }
}
