import Foundation
import Glibc
import TestSupport

/// The bus both services are measured on, in turn, as they are installed: a private bus with the system bus's
/// policy and raised limits, served by a real polkitd with the package's policy (`polkit/*.policy`) and rules
/// (`polkit/io.github.whereabouts1.rules`).
///
/// The load runs as `nobody` outside any login session, where the policy's defaults (`allow_any`) say no. One more
/// rule gives that user what the defaults give a user in an active local session (`allow_active`):
/// `auth_self_keep` for *always*, yes for *when in use*. whereaboutsd then decides as on a desktop: *always*'s
/// challenge is met by the app's `allowed=true`, so *when in use* is not asked.
final class BenchBus: @unchecked Sendable {
    /// The user the load clients run as.
    static let loadUser = "nobody"
    /// The users of the regions bench, ``loadUser`` first: a user may keep at most ``Region/limitPerUser`` regions,
    /// so the service's 10,000 take five of them.
    static let regionUsers = [loadUser, "daemon", "bin", "sys", "www-data"]

    /// The rule standing in for an active login session of ``loadUser`` (and of the regions bench's users).
    static let activeSessionRule = """
        // The bench's load users get what an active local session gets by the package's defaults.
        polkit.addRule(function (action, subject) {
            if (\(regionUsers.map { "subject.user != \"\($0)\"" }.joined(separator: " && ")))
                return polkit.Result.NOT_HANDLED;
            if (action.id == "io.github.whereabouts1.location-always") return polkit.Result.AUTH_SELF_KEEP;
            if (action.id == "io.github.whereabouts1.location-when-in-use") return polkit.Result.YES;
            return polkit.Result.NOT_HANDLED;
        });
        """

    let bus: PrivateBus
    let polkit: PolkitHarness

    init() throws {
        bus = try PolkitHarness.makeBus(extraPolicy: BusMonitor.busPolicy)
        let packageRules = ProjectPaths.root.appendingPathComponent("polkit/io.github.whereabouts1.rules")
        do {
            polkit = try PolkitHarness(
                bus: bus,
                rules: [
                    "50-io.github.whereabouts1.rules": try String(contentsOf: packageRules, encoding: .utf8),
                    "60-bench-active-session.rules": Self.activeSessionRule,
                ])
        } catch {
            bus.stop()
            throw error
        }
    }

    /// polkitd's process id, for its CPU time.
    var polkitPid: pid_t? { polkit.process?.pid }

    func stop() {
        polkit.stop()
        bus.stop()
    }
}
