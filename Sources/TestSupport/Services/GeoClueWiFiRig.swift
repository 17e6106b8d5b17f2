import Foundation
import Glibc
import TestBasics

/// GeoClue 2.6 with its Wi-Fi source on, on a ``PrivateBus`` of its own with the wpa_supplicant stand-in
/// (``WPASupplicantMock``), asking an Ichnaea-compatible server (`[wifi] url=`), for figures side by side with
/// whereaboutsd's Wi-Fi positioning.
///
/// GeoClue asks its server through libsoup and glib-networking, which trust only the system's CA bundle
/// (`/etc/ssl/certs/ca-certificates.crt` on Debian). So that an HTTPS test server is trusted without touching the
/// machine, a copy of that bundle with the test authority's certificate appended is bind-mounted over it in
/// GeoClue's private mount namespace, beside its configuration (see ``GeoClueHarness``).
///
/// GeoClue 2.6's Wi-Fi source, as `src/gclue-wifi.c` and `src/gclue-web-source.c` have it:
/// - it follows the first interface of wpa_supplicant only, and only while a client above city level is started:
///   `BSSAdded` / `BSSRemoved` of that interface, and `Signal` changes of access points it ignores for being at
///   or below −90 dBm (one rising above joins the list);
/// - it scans by itself (`Scan`, passive) on starting and 10 s after every `ScanDone`, whoever asked for that
///   scan; a refused `Scan` makes it stop following `ScanDone` until the client stops;
/// - one second after a `ScanDone`, when its list gained or lost an access point since the last query, it asks
///   again: its cache (every address with its signal divided by ten, exactly) may answer, otherwise the server;
/// - it asks nothing while GLib's network monitor reports less than full connectivity. Without NetworkManager on
///   its bus, GLib's netlink monitor reports full connectivity while the machine has a default route.
public final class GeoClueWiFiRig: @unchecked Sendable {
    /// The bus GeoClue and the stand-in share.
    public let bus: PrivateBus
    /// The wpa_supplicant stand-in, with one interface, `wlan0`.
    public let wpa: WPASupplicantMock
    /// The GeoClue harness: configuration, folder and launch script.
    public let geoClue: GeoClueHarness
    /// GeoClue's process, once started.
    public private(set) var process: ChildProcess?

    /// A geoclue.conf with only the Wi-Fi source on, asking `url` and submitting nothing, ``GeoClueHarness/agentId``
    /// whitelisted, and `apps` allowed for every user as system components.
    public static func configuration(url: String, apps: [String]) -> String {
        GeoClueHarness.configuration(
            apps: Dictionary(uniqueKeysWithValues: apps.map { ($0, true) }), source: .wifi(url: url))
    }

    /// Starts a bus and the stand-in (scans taking `scanDelay` milliseconds) and writes GeoClue's configuration
    /// (see ``configuration(url:apps:)``); `authority`, when given, is trusted besides the system's CAs. Call
    /// ``start()`` to start GeoClue.
    public init(url: String, authority: TestCertificateAuthority?, apps: [String], scanDelay: Int = 100) throws {
        bus = try PrivateBus(extraPolicy: WPASupplicantMock.busPolicy)
        geoClue = try GeoClueHarness(config: Self.configuration(url: url, apps: apps), bus: bus)
        wpa = try WPASupplicantMock(bus: bus, interfaces: ["wlan0"], scanDelay: scanDelay)
        if let authority { try writeBundle(trusting: authority) }
    }

    /// The system's CA bundle, which GeoClue's TLS backend reads.
    static let systemBundle = URL(fileURLWithPath: "/etc/ssl/certs/ca-certificates.crt")

    /// The bundle mounted over ``systemBundle`` in GeoClue's namespace.
    public var bundleFile: URL { geoClue.directory.appendingPathComponent("ca-certificates.crt") }

    private var trustsAuthority = false

    private func writeBundle(trusting authority: TestCertificateAuthority) throws {
        let system = (try? Data(contentsOf: Self.systemBundle)) ?? Data()
        let test = try Data(contentsOf: authority.certificateFile)
        try (system + Data("\n".utf8) + test).write(to: bundleFile)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: bundleFile.path)
        trustsAuthority = true
    }

    /// GeoClue's output so far (debug messages included: `G_MESSAGES_DEBUG=all`).
    public var log: String { process?.log ?? "" }

    /// Starts GeoClue (`-t 0`, no idle exit) and waits until it owns `org.freedesktop.GeoClue2`.
    public func start() throws {
        var prelude = ""
        if trustsAuthority {
            guard FileManager.default.fileExists(atPath: Self.systemBundle.path) else {
                throw TestEnvironmentError("\(Self.systemBundle.path) is missing; install the ca-certificates package")
            }
            let mount = try Executables.find("mount")
            prelude =
                "\(shellQuoted(mount.path)) --bind \(shellQuoted(bundleFile.path)) \(shellQuoted(Self.systemBundle.path))"
        }
        let command = try geoClue.launchCommand(prelude: prelude)
        var environment = bus.environment
        environment["G_MESSAGES_DEBUG"] = "all"
        let process = try ChildProcess(
            command.executable, command.arguments, environment: environment, logFile: geoClue.logFile)
        self.process = process
        try Wait.until("GeoClue to own org.freedesktop.GeoClue2", timeout: 20) {
            guard process.isRunning else { throw TestEnvironmentError("GeoClue exited early:\n\(process.log)") }
            return try geoClue.nameOwned()
        }
    }

    /// How many times GeoClue's log says its Wi-Fi cache answered, and how many times it did not (a query).
    public var cacheCounts: (hits: Int, misses: Int) {
        let text = log
        return (
            text.components(separatedBy: "Cache hit for key").count - 1,
            text.components(separatedBy: "Cache miss for key").count - 1
        )
    }

    /// Whether GeoClue's log shows one of its own scans refused, after which it no longer follows `ScanDone`.
    public var scanWasRefused: Bool { log.contains("Scanning of WiFi networks failed") }

    /// Stops GeoClue, the stand-in and the bus.
    public func stop() {
        process?.stop(grace: 2)
        wpa.stop()
        geoClue.stop()
    }

    deinit { stop() }
}
