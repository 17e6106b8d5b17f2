import Foundation
import HTTP
import Loop
import TestBasics
import TestSupport
import WhereaboutsCore

/// `Start` → first fix for new exact clients run as `nobody`, against whereaboutsd as installed.
struct FirstFixes {
    /// An unknown place, answered by the loopback server (the app's polkit answer reused, as a minute holds it).
    var fromServer: [Double] = []
    /// The same place again, from the cache.
    var fromCache: [Double] = []
    /// The same place again, from the cache, for an app polkit has not been asked about yet.
    var fromCacheAskingPolkit: [Double] = []
    /// libcurl's HTTPS round trip alone to the same server, a new connection each.
    var roundTrips: [Double] = []
    /// How many times polkitd ran the bench's rule, for how many `Start`s.
    var polkitChecks = 0
    var starts = 0
}

/// Access points no earlier trial used, so that the place is unknown to the cache.
func place(_ trial: Int) -> [WPASupplicantMock.BSS] {
    (0..<4).map { index in
        .init(
            bssid: [0x00, 0x50, UInt8(trial >> 8), UInt8(trial & 0xff), 0x00, UInt8(index)], ssid: "ap\(index)",
            signal: Int16(-50 - 5 * index))
    }
}

/// Makes the stand-in's wlan0 hold `bsses`, as after a scan someone else asked for.
@concurrent
func hold(_ bsses: [WPASupplicantMock.BSS], _ wpa: WPASupplicantMock) async throws {
    try wpa.setScanResults("wlan0", bsses)
    try wpa.scan("wlan0")
    let path = try wpa.path(of: "wlan0")
    let address = bsses[0].properties["BSSID"]
    for _ in 0..<500 {
        let output = try WPASupplicantMock.busctl(
            wpa.bus, ["get-property", WPASupplicantMock.busName, path, "fi.w1.wpa_supplicant1.Interface", "BSSs"])
        let paths = output.output.split(separator: " ").dropFirst(2).map {
            $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"\n"))
        }
        if paths.count == bsses.count, let first = paths.first {
            let bssid = try WPASupplicantMock.busctl(
                wpa.bus, ["get-property", WPASupplicantMock.busName, first, "fi.w1.wpa_supplicant1.BSS", "BSSID"])
            if case .bytes(let octets)? = address, bssid.output.contains(octets.map(String.init).joined(separator: " "))
            {
                return
            }
        }
        try await Task.sleep(for: .milliseconds(10))
    }
    throw TestEnvironmentError("wlan0 does not hold the new place")
}

/// `trials` rounds on `rig`: wpa_supplicant holds a new place from someone else's scan (which the daemon reads on
/// starting, so no scan of ours is waited for), then three new clients: the bench's app twice (the server, then
/// the cache answers) and an app of its own (the cache answers; polkit is asked). Then libcurl's round trip alone.
@concurrent
func measureFirstFixes(_ rig: InstalledDaemon, server: IchnaeaServer, authority: TestCertificateAuthority, trials: Int)
    async throws -> FirstFixes
{
    var figures = FirstFixes()
    let checksBefore = rig.authorisation.checks
    for trial in 0..<trials {
        try await hold(place(trial), rig.wpa)
        if let time = try AppClient.firstFix(on: rig.bus, app: InstalledDaemon.app) { figures.fromServer.append(time) }
        if let time = try AppClient.firstFix(on: rig.bus, app: InstalledDaemon.app) { figures.fromCache.append(time) }
        if let time = try AppClient.firstFix(on: rig.bus, app: "\(InstalledDaemon.app)-\(trial)") {
            figures.fromCacheAskingPolkit.append(time)
        }
        figures.starts += 3
    }
    figures.polkitChecks = rig.authorisation.checks - checksBefore
    let transport = CurlTransport(userAgent: "wbnet", caFile: authority.certificateFile.path)
    let body = Array(
        #"{"wifiAccessPoints":[{"macAddress":"00:11:22:33:44:55","signalStrength":-50},{"macAddress":"00:11:22:33:44:56","signalStrength":-60}]}"#
            .utf8)
    for _ in 0..<trials {
        let started = monotonicNanoseconds()
        if case .success = await transport.post(HTTPRequest(url: server.url(), body: body)) {
            figures.roundTrips.append(milliseconds(monotonicNanoseconds() - started))
        }
    }
    return figures
}
