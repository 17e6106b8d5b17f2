import Foundation
import Glibc
import TestSupport

/// whereaboutsd as users install it, on a private bus of its own: a real polkitd with the package's policy and
/// rules plus ``InstalledDaemon/grantRule``, the daemon asking it (`[authorisation] polkit=true`), a logind
/// stand-in in which no process has a session, and the wpa_supplicant stand-in; clients run as `nobody`.
final class InstalledDaemon: @unchecked Sendable {
    /// The desktop id of the bench's app; ``grantRule`` also lets ids beginning with `wbnet-` in, so that a check
    /// polkit has not answered yet can be forced.
    static let app = "wbnet"
    /// The user the bench's apps run as.
    static let user = "nobody"
    /// The name of ``grantRule``'s file in `/etc/polkit-1/rules.d` (in polkitd's own mount namespace).
    static let grantRuleFile = "50-wbnet-always.rules"
    /// The administrator's rule, or the user's grant, that the bench plays: *always* for the bench's apps and user.
    /// `nobody` is in no login session, where the package's policy says no to both location actions.
    static let grantRule = """
        // wbnet: io.github.whereabouts1.location-always for the bench's apps (wbnet, wbnet-N) run by nobody.
        polkit.addRule(function (action, subject) {
            var app = action.lookup("app") || "";
            if (action.id.indexOf("io.github.whereabouts1.") == 0 && subject.user == "\(user)") {
                polkit.log("wbnet-check " + action.id + " " + app);
            }
            if (action.id == "io.github.whereabouts1.location-always" && subject.user == "\(user)" &&
                (app == "\(app)" || app.indexOf("\(app)-") == 0)) {
                return polkit.Result.YES;
            }
        });
        """
    /// The package's own rules file, installed in `/usr/share/polkit-1/rules.d` by the Debian package.
    static let packageRules = ProjectPaths.root.appendingPathComponent("polkit/io.github.whereabouts1.rules")

    let bus: PrivateBus
    let polkit: PolkitHarness
    let logind: LogindMock
    let wpa: WPASupplicantMock
    let daemon: DaemonHarness

    /// Starts everything, the daemon asking `url` and trusting `authority`; `network` false turns network
    /// positioning off.
    init(url: String, authority: TestCertificateAuthority, network: Bool = true) throws {
        bus = try PolkitHarness.makeBus(extraPolicy: WPASupplicantMock.busPolicy + "\n" + LogindMock.busPolicy)
        let packageRules = try String(contentsOf: Self.packageRules, encoding: .utf8)
        polkit = try PolkitHarness(
            bus: bus, rules: [Self.grantRuleFile: Self.grantRule, Self.packageRules.lastPathComponent: packageRules])
        logind = try LogindMock(bus: bus)
        // No process is in a session: GetSessionByPID answers NoSessionForPID, as logind does for them.
        try logind.mapProcesses([:])
        wpa = try WPASupplicantMock(bus: bus, interfaces: ["wlan0"], scanDelay: 1)
        let config = """
            [network]
            enable=\(network)
            ca-file=\(authority.certificateFile.path)
            [wifi]
            enable=true
            url=\(url)
            """
        daemon = try DaemonHarness(config: config, polkit: true, bus: bus)
        try daemon.startDaemon()
    }

    /// The daemon's process id.
    var pid: pid_t {
        get throws {
            guard let pid = daemon.daemon?.pid else { throw TestEnvironmentError("the daemon is not running") }
            return pid
        }
    }

    /// How many times polkitd ran ``grantRule`` for a Whereabouts action, from the line the rule logs each time.
    var polkitChecks: Int { polkit.log.components(separatedBy: "wbnet-check ").count - 1 }

    /// Stops the daemon, the stand-ins, polkitd and the bus.
    func stop() {
        daemon.stop()
        wpa.stop()
        logind.stop()
        polkit.stop()
        bus.stop()
    }
}
