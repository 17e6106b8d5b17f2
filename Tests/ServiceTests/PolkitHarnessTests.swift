import Foundation
import Glibc
import TestBasics
import TestSupport
import Testing

/// The polkit test harness against a real polkitd: the project's policy, test rules, callers running as `nobody`.
///
/// Every caller here is outside any logind session (`local=false active=false`), so only `allow_any` and rules
/// decide. The answers are printed, so a run documents what polkit said.
@Suite("polkit harness: a real polkitd with the project's policy", .serialized)
struct PolkitHarnessTests {
    static let whenInUse = "io.github.whereabouts1.location-when-in-use"
    static let always = "io.github.whereabouts1.location-always"
    static let manage = "io.github.whereabouts1.manage"

    /// A rule answering `result` for `nobody` asking for location when in use, logging what polkit saw.
    static func rule(answering result: String) -> String {
        """
        polkit.addRule(function (action, subject) {
            if (action.id == "\(whenInUse)" && subject.user == "nobody") {
                polkit.log("test rule: user=" + subject.user + " local=" + subject.local + " active=" + subject.active);
                return polkit.Result.\(result);
            }
        });
        """
    }

    /// A bus with polkitd on it; both stop when the test ends.
    final class Environment {
        let bus: PrivateBus
        let polkit: PolkitHarness

        init(rules: [String: String] = [:], actionOwner: String? = nil) throws {
            bus = try PolkitHarness.makeBus()
            do {
                polkit = try PolkitHarness(bus: bus, rules: rules, actionOwner: actionOwner)
            } catch {
                bus.stop()
                throw error
            }
        }

        deinit {
            polkit.stop()
            bus.stop()
        }
    }

    @Test(arguments: [
        ("YES", PolkitCheck.Answer.authorised),
        ("NO", .notAuthorised),
        ("AUTH_SELF", .challenge),
    ])
    func ruleAnswersAreObserved(result: String, expected: PolkitCheck.Answer) throws {
        let environment = try Environment(rules: ["10-test.rules": Self.rule(answering: result)])
        let check = try environment.polkit.pkcheck(Self.whenInUse)
        print("rule polkit.Result.\(result), nobody checking itself for \(Self.whenInUse): \(check)")
        #expect(check.answer == expected, "\(check)\n\(environment.polkit.log)")
        // The rule ran, for nobody, outside any session.
        #expect(
            environment.polkit.log.contains("test rule: user=nobody local=false active=false"),
            "\(environment.polkit.log)")
    }

    @Test func shippedDefaultsForACallerWithoutASession() throws {
        let environment = try Environment()
        let answers = try [Self.whenInUse, Self.always, Self.manage].map { try environment.polkit.pkcheck($0) }
        for (action, check) in zip([Self.whenInUse, Self.always, Self.manage], answers) {
            print("no rules, nobody without a session, \(action): \(check)")
        }
        #expect(answers[0].answer == .notAuthorised, "\(answers[0])")
        #expect(answers[1].answer == .notAuthorised, "\(answers[1])")
        // auth_admin_keep: an administrator could say yes, and would be remembered for a while.
        #expect(answers[2].answer == .challenge, "\(answers[2])")
        #expect(answers[2].output.contains("polkit\\56retains_authorization_after_challenge=1"), "\(answers[2])")
        // Root is authorised whatever the policy says.
        let root = try environment.polkit.pkcheck(Self.whenInUse, caller: nil)
        print("no rules, root checking itself, \(Self.whenInUse): \(root)")
        #expect(root.answer == .authorised, "\(root)")
    }

    @Test func theRawDBusCallGivesTheSameAnswers() throws {
        let environment = try Environment(rules: ["10-test.rules": Self.rule(answering: "AUTH_SELF")])
        let subject = try environment.polkit.spawn(["sleep", "60"])
        defer { subject.stop(grace: 0) }
        let challenge = try environment.polkit.checkAuthorization(Self.whenInUse, subject: subject.pid)
        let refused = try environment.polkit.checkAuthorization(Self.always, subject: subject.pid)
        print(
            "CheckAuthorization as nobody for its own process: when-in-use \(challenge.output), always \(refused.output)"
        )
        #expect(challenge.status == 0 && challenge.output.hasPrefix("(bba{ss}) false true"), "\(challenge)")
        #expect(refused.status == 0 && refused.output.hasPrefix("(bba{ss}) false false"), "\(refused)")
    }

    /// polkit lets only root, or a user named in the action's `org.freedesktop.policykit.owner`, pass details or
    /// check another user's process: the service must run as root or as the owner the policy names.
    @Test func detailsAndOtherUsersNeedATrustedCaller() throws {
        let rules = [
            "10-app.rules": """
            polkit.addRule(function (action, subject) {
                if (action.id == "\(Self.whenInUse)" && action.lookup("app") == "org.example.Maps") {
                    return polkit.Result.YES;
                }
            });
            """
        ]
        let environment = try Environment(rules: rules, actionOwner: "unix-user:daemon")
        let app = try environment.polkit.spawn(["sleep", "60"])
        defer { app.stop(grace: 0) }
        let details = ["app": "org.example.Maps", "accuracy": "8", "grant": "when-in-use", "approximate": "false"]

        let selfWithDetails = try environment.polkit.pkcheck(Self.whenInUse, details: details)
        print("nobody passing details for itself: \(selfWithDetails)")
        #expect(selfWithDetails.answer == .failed, "\(selfWithDetails)")
        #expect(selfWithDetails.output.contains("Only trusted callers"), "\(selfWithDetails)")

        let otherUser = try environment.polkit.pkcheck(Self.whenInUse, subject: app.pid, caller: "www-data")
        print("www-data checking nobody's process: \(otherUser)")
        #expect(otherUser.answer == .failed, "\(otherUser)")
        #expect(otherUser.output.contains("Only trusted callers"), "\(otherUser)")

        let root = try environment.polkit.pkcheck(Self.whenInUse, subject: app.pid, details: details, caller: nil)
        print("root checking nobody's process with app=org.example.Maps: \(root)")
        #expect(root.answer == .authorised, "\(root)")

        let owner = try environment.polkit.pkcheck(Self.whenInUse, subject: app.pid, details: details, caller: "daemon")
        print("the action owner (daemon) checking nobody's process with app=org.example.Maps: \(owner)")
        #expect(owner.answer == .authorised, "\(owner)")

        var otherApp = details
        otherApp["app"] = "org.example.Other"
        let other = try environment.polkit.pkcheck(
            Self.whenInUse, subject: app.pid, details: otherApp, caller: "daemon")
        print("the action owner checking nobody's process with app=org.example.Other: \(other)")
        #expect(other.answer == .notAuthorised, "\(other)")
    }

    /// The prompt names the app: polkitd substitutes `$(app)` in the policy's message from the check's details.
    @Test func theAgentsMessageNamesTheApp() throws {
        let rules = [
            "10-prompt.rules": """
            polkit.addRule(function (action, subject) {
                if (action.id == "\(Self.always)" && subject.user == "nobody") return polkit.Result.AUTH_SELF_KEEP;
            });
            """
        ]
        let environment = try Environment(rules: rules)
        let app = try environment.polkit.spawn(["sleep", "60"])
        defer { app.stop(grace: 0) }
        let agent = try environment.polkit.startTextAgent(for: app.pid)
        defer { agent.signal(SIGKILL) }
        let check = try Unprivileged.spawn(
            [
                "pkcheck", "--action-id", Self.always, "--process", String(app.pid), "--allow-user-interaction",
                "--detail", "app", "org.example.Maps", "--detail", "grant", "always",
            ],
            asUser: nil, environment: environment.bus.environment, in: environment.polkit.directory)
        defer { check.stop(grace: 0) }
        let message = "org.example.Maps wants to use your location at any time, also when you are not using it"
        // The agent writes the message and the identity line apart; wait for both.
        try Wait.until("the agent to show the prompt", timeout: 10) {
            agent.log.contains(message) && agent.log.contains("Authenticating as:")
        }
        print("pkttyagent showed: \(agent.log.split(whereSeparator: \.isNewline).joined(separator: " | "))")
        #expect(agent.log.contains("Authenticating as: nobody"), "\(agent.log)")
        #expect(check.isRunning, "pkcheck returned before the prompt was answered: \(check.log)")
        // The agent going away ends the check; polkit reports it as not authorised, not as dismissed.
        agent.signal(SIGKILL)
        try check.wait(timeout: 10)
        let result = PolkitCheck(exitCode: check.exitCode ?? -1, output: check.log)
        print("pkcheck after the agent was killed: \(result)")
        #expect(result.answer == .notAuthorised, "\(result)")
    }

    @Test func kioskExampleDeniesEverything() throws {
        let environment = try Environment(rules: [
            "50-whereabouts-kiosk.rules": try PolkitHarness.exampleRules("50-whereabouts-kiosk.rules")
        ])
        let app = try environment.polkit.spawn(["sleep", "60"])
        defer { app.stop(grace: 0) }
        for action in [Self.whenInUse, Self.always, Self.manage] {
            let check = try environment.polkit.pkcheck(
                action, subject: app.pid, details: ["app": "org.example.Navigator", "grant": "always"], caller: nil)
            print("kiosk example, \(action): \(check)")
            #expect(check.answer == .notAuthorised, "\(action): \(check)\n\(environment.polkit.log)")
        }
    }

    @Test func alwaysForAppExampleGrantsOneApp() throws {
        let environment = try Environment(rules: [
            "50-whereabouts-always-for-app.rules": try PolkitHarness.exampleRules("50-whereabouts-always-for-app.rules")
        ])
        let app = try environment.polkit.spawn(["sleep", "60"])
        defer { app.stop(grace: 0) }
        func check(_ action: String, app id: String, identity: String = "flatpak") throws -> PolkitCheck {
            let details = [
                "app": id, "identity": identity, "accuracy": "8", "grant": "always", "approximate": "false",
            ]
            let check = try environment.polkit.pkcheck(action, subject: app.pid, details: details, caller: nil)
            print("always-for-app example, \(action), app=\(id): \(check)")
            return check
        }
        let navigatorAlways = try check(Self.always, app: "org.example.Navigator")
        #expect(navigatorAlways.answer == .authorised, "\(navigatorAlways)\n\(environment.polkit.log)")
        // location-always implies location-when-in-use.
        let navigatorWhenInUse = try check(Self.whenInUse, app: "org.example.Navigator")
        #expect(navigatorWhenInUse.answer == .authorised, "\(navigatorWhenInUse)")
        // A process that only claims the app's id is not the app the rule grants.
        let claimed = try check(Self.always, app: "org.example.Navigator", identity: "claimed")
        #expect(claimed.answer == .notAuthorised, "\(claimed)")
        let otherAlways = try check(Self.always, app: "org.example.Other")
        #expect(otherAlways.answer == .notAuthorised, "\(otherAlways)")
        let otherWhenInUse = try check(Self.whenInUse, app: "org.example.Other")
        #expect(otherWhenInUse.answer == .notAuthorised, "\(otherWhenInUse)")
    }

    @Test func killingAndRestartingPolkitd() throws {
        let environment = try Environment(rules: ["10-test.rules": Self.rule(answering: "YES")])
        let polkit = environment.polkit
        let first = try #require(polkit.process?.pid)
        #expect(try polkit.pkcheck(Self.whenInUse).answer == .authorised)

        polkit.stop()
        #expect(!polkit.isRunning)
        #expect(try !polkit.nameOwned(by: nil))
        let absent = try polkit.pkcheck(Self.whenInUse)
        print("polkitd killed: \(absent)")
        #expect(absent.answer == .failed, "\(absent)")

        try polkit.restart()
        let second = try #require(polkit.process?.pid)
        #expect(second != first)
        #expect(try polkit.nameOwned(by: second))
        let back = try polkit.pkcheck(Self.whenInUse)
        print("polkitd restarted: \(back)")
        #expect(back.answer == .authorised, "\(back)\n\(polkit.log)")

        // restart() also works on a running polkitd.
        try polkit.restart()
        #expect(try polkit.pkcheck(Self.whenInUse).answer == .authorised)
        #expect(polkit.log.components(separatedBy: "--- starting polkitd").count == 4, "\(polkit.log)")
    }

    @Test func missingRulesSuffixIsRefused() throws {
        let bus = try PolkitHarness.makeBus()
        defer { bus.stop() }
        #expect(throws: TestEnvironmentError.self) {
            _ = try PolkitHarness(bus: bus, rules: ["10-test.js": Self.rule(answering: "YES")])
        }
    }

    /// A polkitd that cannot start is a failure with its log, never a hang or a skip.
    @Test func aBusWithoutPolkitsPolicyIsAnError() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        do {
            _ = try PolkitHarness(bus: bus)
            Issue.record("polkitd started on a bus that does not let it own its name")
        } catch let error as TestEnvironmentError {
            print("polkitd on a bus without its policy: \(error)")
            #expect(error.description.contains("polkitd"), "\(error)")
            #expect(error.description.contains("org.freedesktop.PolicyKit1"), "\(error)")
        }
    }

    /// polkitd's mounts stay inside its namespace: the machine's folders are untouched.
    @Test func theMachinesPolkitFoldersAreUntouched() throws {
        let before = try machinePolkitFiles()
        let environment = try Environment(rules: ["10-test.rules": Self.rule(answering: "YES")])
        let mounts = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
        #expect(!mounts.contains("/polkit-1/"), "\(mounts)")
        #expect(try machinePolkitFiles() == before)
        let polkitd = try #require(environment.polkit.process?.pid)
        let inside = try String(contentsOfFile: "/proc/\(polkitd)/mountinfo", encoding: .utf8)
        #expect(inside.contains("/usr/share/polkit-1/actions"), "\(inside)")
    }

    private func machinePolkitFiles() throws -> [String] {
        try ["/usr/share/polkit-1/actions", "/etc/polkit-1/rules.d", "/usr/share/polkit-1/rules.d"].flatMap { folder in
            try FileManager.default.contentsOfDirectory(atPath: folder).sorted().map { "\(folder)/\($0)" }
        }
    }
}
