// wbnet: figures for network positioning, not tests. Printed by `make bench` beside the other figures.
//
//   swift build -c release && .build/release/wbnet [--trials N]
//
// 1. Lookups in a simulated hour by a machine that sits still with a client running: Whereabouts' Wi-Fi
//    provider itself (scripted scans every 10 s, a manual clock, a transport that counts) against GeoClue 2.8's
//    rule applied to the same scans (re-query when an access point appears or goes, its ±5 dBm cache).
// 2. Start → first fix for an exact client, the real daemon on a private bus with the wpa_supplicant stand-in
//    (its scan answering at once) and a loopback HTTPS Ichnaea server: from the cache, and from the server, with
//    the HTTP round trip alone (libcurl against the same server) shown apart.
// 3. The daemon's memory at idle with network positioning off and on, and after its first lookup has loaded
//    libcurl.
import DBus
import Foundation
import Glibc
import HTTP
import Loop
import TestSupport
import WhereaboutsCore

/// `--trials N` (default 20).
func parseTrials(_ arguments: [String]) -> Int {
    var trials = 20
    var rest = arguments[...]
    while let flag = rest.popFirst() {
        guard flag == "--trials", let text = rest.popFirst(), let value = Int(text), value > 0 else {
            print("usage: wbnet [--trials N (20)]")
            exit(2)
        }
        trials = value
    }
    return trials
}

func milliseconds(_ nanoseconds: Int64) -> Double { Double(nanoseconds) / 1e6 }

func summary(_ values: [Double]) -> String {
    guard !values.isEmpty else { return "no samples" }
    func f(_ p: Double) -> String { String(format: "%.2f", Percentile.of(values, p)!) }
    return "p50 \(f(50)) ms, p90 \(f(90)) ms, max \(f(100)) ms (n=\(values.count))"
}

/// `VmRSS` and private pages (`Private_Clean` + `Private_Dirty`) of `pid`, in KiB.
func memory(_ pid: pid_t) -> (rss: Int, privateKiB: Int) {
    func kibibytes(_ text: String, _ key: String) -> Int {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let rollup = (try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8)) ?? ""
    return (kibibytes(status, "VmRSS:"), kibibytes(rollup, "Private_Clean:") + kibibytes(rollup, "Private_Dirty:"))
}

func mib(_ kib: Int) -> String { String(format: "%.1f MiB", Double(kib) / 1024) }

/// A private bus with the wpa_supplicant stand-in and the daemon against `server`; `network` false turns
/// network positioning off.
@concurrent
func makeRig(server: IchnaeaServer, authority: TestCertificateAuthority, network: Bool) async throws
    -> (DaemonHarness, WPASupplicantMock)
{
    let bus = try PrivateBus(extraPolicy: WPASupplicantMock.busPolicy)
    let config = """
        [network]
        enable=\(network)
        ca-file=\(authority.certificateFile.path)
        [wifi]
        enable=true
        url=\(server.url())
        """
    let harness = try DaemonHarness(config: config, bus: bus)
    let wpa = try WPASupplicantMock(bus: bus, interfaces: ["wlan0"], scanDelay: 1)
    try harness.startDaemon()
    return (harness, wpa)
}

/// Access points no earlier trial used, so that the place is unknown to the cache.
func place(_ trial: Int) -> [WPASupplicantMock.BSS] {
    (0..<4).map { index in
        .init(bssid: [0x00, 0x50, UInt8(trial >> 8), UInt8(trial & 0xff), 0x00, UInt8(index)], ssid: "ap\(index)",
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
        let paths = output.output.split(separator: " ").dropFirst(2).map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"\n")) }
        if paths.count == bsses.count, let first = paths.first {
            let bssid = try WPASupplicantMock.busctl(
                wpa.bus, ["get-property", WPASupplicantMock.busName, first, "fi.w1.wpa_supplicant1.BSS", "BSSID"])
            if case .bytes(let octets)? = address, bssid.output.contains(octets.map(String.init).joined(separator: " ")) {
                return
            }
        }
        try await Task.sleep(for: .milliseconds(10))
    }
    throw TestEnvironmentError("wlan0 does not hold the new place")
}

/// Milliseconds from `Start` to the first `LocationUpdated` of a new exact client.
@BusActor
func firstFix(_ harness: DaemonHarness) async throws -> Double? {
    let app = try await GeoClueTestClient(bus: harness.bus)
    defer { app.close() }
    let arrivals = try await UpdateArrivals(app)
    let path = try await app.getClient()
    try await app.set(path, GeoClueTestClient.clientInterface, "DesktopId", .string("wbnet"))
    try await app.set(path, GeoClueTestClient.clientInterface, "RequestedAccuracyLevel", .uint32(8))
    let sent = monotonicNanoseconds()
    _ = try await app.call(path, GeoClueTestClient.clientInterface, "Start")
    let deadline = ContinuousClock.now + .seconds(5)
    while arrivals.times.isEmpty && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
    _ = try await app.call(path, GeoClueTestClient.clientInterface, "Stop")
    return arrivals.times.first.map { milliseconds($0 - sent) }
}

@BusActor
func run(trials: Int) async throws {
    print("wbnet: whereaboutsd \(try ProjectPaths.product("whereaboutsd").path), \(ProcessInfo.processInfo.activeProcessorCount) cores")

    // 1.
    print("\n1. Lookups in an hour sitting still, scans every 10 s (12 access points jittering ±8 dBm, 10 weak ones coming and going)")
    for seed: UInt64 in [1, 2, 3] {
        let hour = await stationaryHour(seed: seed)
        print("   seed \(seed): whereaboutsd \(hour.ours), GeoClue 2.8's rule \(hour.geoClue) (model of gclue-wifi.c, not GeoClue run)")
    }

    // 2.
    let authority = try TestCertificateAuthority.make()
    defer { authority.remove() }
    let server = try IchnaeaServer(certificates: authority)
    defer { server.stop() }
    let (harness, wpa) = try await makeRig(server: server, authority: authority, network: true)
    defer {
        harness.stop()
        wpa.stop()
    }
    var fromServer: [Double] = []
    var fromCache: [Double] = []
    for trial in 0..<trials {
        // wpa_supplicant holds a new place from someone else's scan, which the daemon reads on starting.
        try await hold(place(trial), wpa)
        if let time = try await firstFix(harness) { fromServer.append(time) }
        if let time = try await firstFix(harness) { fromCache.append(time) }
    }
    let transport = CurlTransport(userAgent: "wbnet", caFile: authority.certificateFile.path)
    var roundTrips: [Double] = []
    for _ in 0..<trials {
        let started = monotonicNanoseconds()
        let body = Array(#"{"wifiAccessPoints":[{"macAddress":"00:11:22:33:44:55","signalStrength":-50},{"macAddress":"00:11:22:33:44:56","signalStrength":-60}]}"#.utf8)
        if case .success = await transport.post(HTTPRequest(url: server.url(), body: body)) {
            roundTrips.append(milliseconds(monotonicNanoseconds() - started))
        }
    }
    print("\n2. Start → first fix, exact client, wpa_supplicant holding a recent scan (read on starting; no wait for a scan of ours)")
    print("   from the cache:           \(summary(fromCache))   target ≤ 50 ms")
    print("   from the loopback server: \(summary(fromServer))")
    print("   of which HTTPS round trip alone (libcurl, new connection each): \(summary(roundTrips))")

    // 3.
    let pid = try daemonPID(harness)
    let afterLookups = memory(pid)
    let (offHarness, offWPA) = try await makeRig(server: server, authority: authority, network: false)
    let off = memory(try daemonPID(offHarness))
    offHarness.stop()
    offWPA.stop()
    let (idleHarness, idleWPA) = try await makeRig(server: server, authority: authority, network: true)
    try await Task.sleep(for: .milliseconds(300))
    let idle = memory(try daemonPID(idleHarness))
    idleHarness.stop()
    idleWPA.stop()
    print("\n3. Daemon memory (RSS / private)")
    print("   network positioning off:                   \(mib(off.rss)) / \(mib(off.privateKiB))")
    print("   on, idle (libcurl not loaded):             \(mib(idle.rss)) / \(mib(idle.privateKiB))")
    print("   on, after \(2 * trials) fixes (libcurl loaded): \(mib(afterLookups.rss)) / \(mib(afterLookups.privateKiB))")
    print("   what libcurl and TLS add once loaded:      \(mib(afterLookups.rss - idle.rss)) RSS")
}

/// The daemon's process id.
func daemonPID(_ harness: DaemonHarness) throws -> pid_t {
    guard let pid = harness.daemon?.pid else { throw TestEnvironmentError("the daemon is not running") }
    return pid
}

let trials = parseTrials(Array(CommandLine.arguments.dropFirst()))
Task { @BusActor in
    do {
        try await run(trials: trials)
        exit(0)
    } catch {
        print("wbnet: \(error)")
        exit(1)
    }
}
while true { pause() }
