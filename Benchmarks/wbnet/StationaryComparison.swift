import DBus
import Foundation
import Loop
import TestSupport

/// What each service did while sitting still with a client running.
struct SittingStill {
    /// Scripted scans fed to both services.
    var scans = 0
    /// Requests at the server from whereaboutsd, and from GeoClue (its URL carries `?key=geoclue`).
    var oursRequests = 0
    var geoClueRequests = 0
    /// `LocationUpdated` signals each service's client received.
    var oursFixes = 0
    var geoClueFixes = 0
    /// `Scan` calls each service made by itself during the scripted scans (those of the script left out).
    var oursOwnScans = 0
    var geoClueOwnScans = 0
    /// Scripted `Scan` calls refused because a scan of the service's own was running, and tried again.
    var refusedScripted = 0
    /// GeoClue's Wi-Fi cache answers and misses, from its debug log.
    var geoClueCache = (hits: 0, misses: 0)
    /// Whether GeoClue logged one of its own scans refused (after which it stops following `ScanDone`).
    var geoClueScanRefused = false
}

/// The figures for a machine sitting still: whereaboutsd as installed and GeoClue 2.6, each on a private bus of its
/// own with a wpa_supplicant stand-in, both fed the same scripted scans at the same moments and asking one
/// loopback HTTPS Ichnaea server. A scripted scan is another client's `Scan`, as a desktop's network applet
/// makes them: the stand-in then emits `BSSAdded` / `BSSRemoved`, `PropertiesChanged` and `ScanDone`.
@BusActor
func compareSittingStill(_ options: BenchOptions) async throws -> SittingStill {
    let authority = try TestCertificateAuthority.make()
    defer { authority.remove() }
    let server = try IchnaeaServer(certificates: authority)
    defer { server.stop() }
    let ours = try InstalledDaemon(url: server.url(), authority: authority)
    defer { ours.stop() }
    let geoClue = try GeoClueWiFiRig(
        url: server.url() + "?key=geoclue", authority: authority, apps: [InstalledDaemon.app], scanDelay: 1)
    defer { geoClue.stop() }
    try geoClue.start()
    let scans = StationaryPlace().scans(options.scans, seed: options.seed).map { $0.map(\.standInBSS) }
    let mocks = [ours.wpa, geoClue.wpa]
    var result = SittingStill(scans: scans.count)
    // Both stand-ins hold the first scan when the clients start, and each service reads it then.
    // The scan must have ended before GeoClue starts: it scans at once, and a refused scan stops it following them.
    result.refusedScripted += try await feed(scans[0], to: mocks)
    try await Task.sleep(for: .seconds(1))
    let agent = try await GeoClueTestAgent.registered(on: geoClue.bus, as: GeoClueHarness.agentId)
    let client = try await GeoClueTestClient(bus: geoClue.bus)
    defer {
        client.close()
        agent.close()
    }
    _ = try await client.startedClient(desktopId: InstalledDaemon.app, level: 8)
    let app = try AppClient.hold(on: ours.bus, app: InstalledDaemon.app)
    defer { app.stop() }
    // Each service scans by itself on starting; those scans end before the script goes on.
    try await Task.sleep(for: .seconds(3))
    let scanCountsBefore = try mocks.map { try $0.scanCount("wlan0") }
    var scripted = [Int](repeating: 0, count: mocks.count)
    let started = ContinuousClock.now
    let interval = Duration.milliseconds(Int64(options.scanSeconds * 1000))
    for (index, scan) in scans.enumerated().dropFirst() {
        try await Task.sleep(until: started + interval * (index - 1), clock: .continuous)
        let attempts = try await feedCountingAttempts(scan, to: mocks)
        for (mock, count) in attempts.enumerated() { scripted[mock] += count }
        result.refusedScripted += attempts.reduce(0, +) - mocks.count
    }
    // GeoClue asks a second after a scan; the last answer arrives well within this.
    try await Task.sleep(for: .seconds(3))
    let ownScans = try mocks.enumerated().map { try $1.scanCount("wlan0") - scanCountsBefore[$0] - scripted[$0] }
    result.oursOwnScans = ownScans[0]
    result.geoClueOwnScans = ownScans[1]
    let geolocations = try server.requests.filter { $0.path.hasPrefix(IchnaeaServer.geolocatePath) }
    result.geoClueRequests = geolocations.filter { $0.path.contains("key=geoclue") }.count
    result.oursRequests = geolocations.count - result.geoClueRequests
    result.oursFixes = app.log.split(separator: "\n").filter { $0.hasPrefix("fix ") }.count
    result.geoClueFixes = client.locationUpdates.count
    result.geoClueCache = geoClue.cacheCounts
    result.geoClueScanRefused = geoClue.scanWasRefused
    return result
}

/// Makes every stand-in find `scan` from now on and scans once, as another client; returns the refusals.
@concurrent
func feed(_ scan: [WPASupplicantMock.BSS], to mocks: [WPASupplicantMock]) async throws -> Int {
    try await feedCountingAttempts(scan, to: mocks).reduce(0, +) - mocks.count
}

/// ``feed(_:to:)``, returning how many `Scan` calls each stand-in took: a call is refused while a scan of the
/// service's own runs, and is tried again 100 ms later, up to ten times.
@concurrent
func feedCountingAttempts(_ scan: [WPASupplicantMock.BSS], to mocks: [WPASupplicantMock]) async throws -> [Int] {
    var attempts: [Int] = []
    for mock in mocks {
        try mock.setScanResults("wlan0", scan)
        var count = 0
        while true {
            count += 1
            do {
                try mock.scan("wlan0")
                break
            } catch  where count < 10 {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        attempts.append(count)
    }
    return attempts
}
