import Foundation
import Glibc
import TestBasics
import TestSupport

/// whereaboutsd as users install it, on a private bus of its own: the authorisation it meets there
/// (``InstalledAuthorisation``: a real polkitd with the package's policy and rules plus the grant for the bench's
/// apps, the daemon asking it, a logind stand-in in which no process has a session), and the wpa_supplicant
/// stand-in; clients run as ``InstalledAuthorisation/user``.
final class InstalledDaemon: @unchecked Sendable {
    /// The desktop id of the bench's app (see ``InstalledAuthorisation/app``).
    static let app = "wbnet"

    let authorisation: InstalledAuthorisation
    let wpa: WPASupplicantMock
    let daemon: DaemonHarness

    /// Starts everything, the daemon asking `url` and trusting `authority`; `network` false turns network
    /// positioning off; `wifi` is added to the `[wifi]` group.
    init(url: String, authority: TestCertificateAuthority, network: Bool = true, wifi: String = "") throws {
        authorisation = try InstalledAuthorisation(app: Self.app, extraPolicy: WPASupplicantMock.busPolicy)
        wpa = try WPASupplicantMock(bus: authorisation.bus, interfaces: ["wlan0"], scanDelay: 1)
        let config = """
            [network]
            enable=\(network)
            ca-file=\(authority.certificateFile.path)
            [wifi]
            enable=true
            url=\(url)
            \(wifi)
            """
        daemon = try DaemonHarness(config: config, polkit: true, bus: authorisation.bus)
        try daemon.startDaemon()
    }

    /// The private bus.
    var bus: PrivateBus { authorisation.bus }

    /// The daemon's process id.
    var pid: pid_t {
        get throws {
            guard let pid = daemon.daemon?.pid else { throw TestEnvironmentError("the daemon is not running") }
            return pid
        }
    }

    /// Stops the daemon, the stand-ins, polkitd and the bus.
    func stop() {
        daemon.stop()
        wpa.stop()
        authorisation.stop()
    }
}
