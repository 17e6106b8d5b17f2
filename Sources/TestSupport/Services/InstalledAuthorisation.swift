import Foundation

/// The authorisation whereaboutsd meets as users install it, on a private bus of its own, for the benchmarks: a
/// real polkitd with the package's policy and rules plus ``grantRule(for:)``, and a logind stand-in in which no process
/// has a session. Start the daemon on ``bus`` asking polkit (`DaemonHarness(config:polkit: true, bus:)`, which
/// writes `[authorisation] polkit=true`) and run its apps as ``user``.
public final class InstalledAuthorisation: @unchecked Sendable {
    /// The user the benchmarks' apps run as.
    public static let user = "nobody"
    /// The package's own rules file, installed in `/usr/share/polkit-1/rules.d` by the Debian package.
    public static let packageRules = ProjectPaths.root.appendingPathComponent("polkit/io.github.whereabouts1.rules")
    /// The package's rule granting ModemManager's actions to the service's user.
    public static let modemManagerRules = ProjectPaths.root.appendingPathComponent(
        "polkit/io.github.whereabouts1-modemmanager.rules")
    /// ModemManager's installed polkit actions.
    public static let modemManagerActions = URL(
        fileURLWithPath: "/usr/share/polkit-1/actions/org.freedesktop.ModemManager1.policy")

    /// The desktop id of the benchmark's app; ``grantRule(for:)`` also lets ids beginning with `APP-` in, so that
    /// a check polkit has not answered yet can be forced.
    public let app: String
    /// The private bus.
    public let bus: PrivateBus
    /// polkitd with the package's policy, its rules and ``grantRule(for:)``.
    public let polkit: PolkitHarness
    /// logind, answering `NoSessionForPID` for every process.
    public let logind: LogindMock

    /// Starts a bus with polkitd's, logind's and `extraPolicy`'s rules, polkitd and the logind stand-in. With
    /// `modemManager`, polkitd also knows ModemManager's actions (its installed policy) and has the package's rule
    /// granting them to the service's user, for a real ModemManager on the bus.
    public init(app: String, extraPolicy: String = "", modemManager: Bool = false) throws {
        self.app = app
        bus = try PolkitHarness.makeBus(extraPolicy: LogindMock.busPolicy + "\n" + extraPolicy)
        var rules = [
            Self.grantRuleFile(for: app): Self.grantRule(for: app),
            Self.packageRules.lastPathComponent: try String(contentsOf: Self.packageRules, encoding: .utf8),
        ]
        var policies: [String: String] = [:]
        if modemManager {
            rules[Self.modemManagerRules.lastPathComponent] = try String(
                contentsOf: Self.modemManagerRules, encoding: .utf8)
            policies[Self.modemManagerActions.lastPathComponent] = try String(
                contentsOf: Self.modemManagerActions, encoding: .utf8)
        }
        polkit = try PolkitHarness(bus: bus, rules: rules, extraPolicies: policies)
        logind = try LogindMock(bus: bus)
        // No process is in a session: GetSessionByPID answers NoSessionForPID, as logind does for them.
        try logind.mapProcesses([:])
    }

    /// The name of ``grantRule(for:)``'s file in `/etc/polkit-1/rules.d` (in polkitd's own mount namespace).
    public static func grantRuleFile(for app: String) -> String { "50-\(app)-always.rules" }

    /// The administrator's rule, or the user's grant, that the benchmark plays: *always* for `app` (and `app-N`)
    /// run by ``user``, who is in no login session, where the package's policy says no to both location actions.
    public static func grantRule(for app: String) -> String {
        """
        // \(app): io.github.whereabouts1.location-always for the benchmark's apps (\(app), \(app)-N) run by \(user).
        polkit.addRule(function (action, subject) {
            var app = action.lookup("app") || "";
            if (action.id.indexOf("io.github.whereabouts1.") == 0 && subject.user == "\(user)") {
                polkit.log("\(app)-check " + action.id + " " + app);
            }
            if (action.id == "io.github.whereabouts1.location-always" && subject.user == "\(user)" &&
                (app == "\(app)" || app.indexOf("\(app)-") == 0)) {
                return polkit.Result.YES;
            }
        });
        """
    }

    /// How many times polkitd ran ``grantRule(for:)`` for a Whereabouts action, from the line the rule logs each time.
    public var checks: Int { polkit.log.components(separatedBy: "\(app)-check ").count - 1 }

    /// Stops the logind stand-in, polkitd and the bus.
    public func stop() {
        logind.stop()
        polkit.stop()
        bus.stop()
    }
}
