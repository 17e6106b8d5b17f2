import Foundation
import Glibc
import TestSupport
import Testing

/// The package's polkit rule for ModemManager (`polkit/io.github.whereabouts1-modemmanager.rules`) in a real
/// polkitd, with ModemManager's actions declared as its policy declares them (administrators only from a caller
/// outside a session): the service's user gets exactly the action `Setup` and `SetGpsRefreshRate` check, not the one
/// `GetLocation` checks (the daemon reads the signalled `Location` property instead), and nobody else gets anything.
@Suite("polkit: the rule granting ModemManager's Device.Control to the service's user", .serialized)
struct ModemManagerRuleTests {
    static let deviceControl = "org.freedesktop.ModemManager1.Device.Control"
    static let location = "org.freedesktop.ModemManager1.Location"
    static let messaging = "org.freedesktop.ModemManager1.Messaging"

    /// ModemManager's actions that matter here, with its defaults: an administrator's password for a caller that
    /// is not in an active session.
    static let modemManagerPolicy = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE policyconfig PUBLIC "-//freedesktop//DTD PolicyKit Policy Configuration 1.0//EN"
          "http://www.freedesktop.org/standards/PolicyKit/1/policyconfig.dtd">
        <policyconfig>
          <vendor>ModemManager</vendor>
        """
        + [deviceControl, location, messaging].map { action in
            """
              <action id="\(action)">
                <description>\(action)</description>
                <message>\(action)</message>
                <defaults>
                  <allow_any>auth_admin</allow_any>
                  <allow_inactive>auth_admin</allow_inactive>
                  <allow_active>yes</allow_active>
                </defaults>
              </action>
            """
        }.joined(separator: "\n") + "\n</policyconfig>\n"

    @Test func theServiceUserGetsDeviceControlAndNothingMore() throws {
        let rule = try String(
            contentsOf: ProjectPaths.root.appendingPathComponent("polkit/io.github.whereabouts1-modemmanager.rules"),
            encoding: .utf8)
        let bus = try PolkitHarness.makeBus()
        defer { bus.stop() }
        let polkit = try PolkitHarness(
            bus: bus, rules: ["50-io.github.whereabouts1-modemmanager.rules": rule],
            extraPolicies: ["org.freedesktop.ModemManager1.policy": Self.modemManagerPolicy])
        defer { polkit.stop() }
        let check = try polkit.pkcheck(Self.deviceControl, caller: "whereabouts")
        #expect(check.answer == .authorised, "whereabouts, \(Self.deviceControl): \(check)")
        for action in [Self.deviceControl, Self.location, Self.messaging] {
            let other = try polkit.pkcheck(action, caller: "nobody")
            #expect(other.answer == .challenge, "nobody, \(action): \(other)")
        }
        for action in [Self.location, Self.messaging] {
            let refused = try polkit.pkcheck(action, caller: "whereabouts")
            #expect(refused.answer == .challenge, "whereabouts, \(action): \(refused)")
        }
    }
}
