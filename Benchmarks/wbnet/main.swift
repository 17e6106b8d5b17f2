// wbnet: figures for network positioning, not tests. Printed by `make bench` beside the other figures.
//
//   swift build -c release && .build/release/wbnet [--trials N] [--scans N] [--scan-seconds S] [--seed N]
//
// Everything as users install it: the daemon (built as packaged when WHEREABOUTS_BIN_DIR names that build) with
// `[authorisation] polkit=true`, a real polkitd on its private bus with the package's policy and rules, a
// logind stand-in, and apps run as the unprivileged `nobody`, whom one rule (InstalledAuthorisation.grantRule(for:)) lets
// locate at any time, as an administrator's rule or the user's grant would.
//
// 1. Lookups while sitting still with a client running: whereaboutsd and GeoClue 2.6 (its Wi-Fi source, run)
//    fed the same scripted scans, counted at the one loopback HTTPS Ichnaea server both ask.
// 2. Start → first fix for a new exact client: from the cache (polkit's answer reused, and asked anew), and
//    from the server, with libcurl's HTTPS round trip alone shown apart.
// 3. The daemon's memory with network positioning off, on and idle, after a Start, and after the lookups of 2.
//
//   .build/release/wbnet --filters [--seed N]
//
// What the access point filters cost per scan of 60 access points, with the moving networks left out and kept
// (ScanFilters), in process.
//
//   .build/release/wbnet --scan-cpu [--seed N]
//
// The CPU each service spends on a scan of those 60 access points, as installed: whereaboutsd with the moving
// networks left out and kept, and GeoClue 2.6 (ScanCPU).
import Foundation
import Glibc
import Loop
import TestSupport

/// Runs the three parts and prints their figures.
@BusActor
func run(_ options: BenchOptions) async throws {
    let daemonPath = try ProjectPaths.product("whereaboutsd").path
    print(
        "wbnet: whereaboutsd \(daemonPath), GeoClue \(GeoClueHarness.executable.path) \(Machine.packageVersion("geoclue-2.0")), "
            + "polkitd \(Machine.packageVersion("polkitd")); \(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(Machine.loadAverage())"
    )
    print(
        "as installed: polkitd on each private bus with polkit/io.github.whereabouts1.policy and the package's rules "
            + "(\(InstalledAuthorisation.packageRules.lastPathComponent)), plus /etc/polkit-1/rules.d/\(InstalledAuthorisation.grantRuleFile(for: InstalledDaemon.app)): "
            + "YES to io.github.whereabouts1.location-always for user \(InstalledAuthorisation.user) and apps \(InstalledDaemon.app), "
            + "\(InstalledDaemon.app)-N (it plays the administrator's rule or the user's grant; \(InstalledAuthorisation.user) is in no "
            + "login session, where the policy says no); the daemon with [authorisation] polkit=true; a logind stand-in "
            + "(no process in a session); apps run as \(InstalledAuthorisation.user) (setpriv; python-dbus, Tests/Clients/location_client.py)"
    )

    // 1.
    let place = StationaryPlace()
    let realSeconds = Double(options.scans) * options.scanSeconds
    print(
        "\n1. Lookups sitting still with a client running: \(options.scans) scans (\(place.strong) access points "
            + "jittering ±\(place.jitter) dBm, \(place.weak) weak ones heard in half the scans; seed \(options.seed)), "
            + String(
                format: "%g s apart: %.0f s of scans at 10 s run in %.0f s", options.scanSeconds,
                Double(options.scans) * 10, realSeconds))
    print(
        "   each service on a private bus of its own with a wpa_supplicant stand-in, both fed each scan at the same "
            + "moment (another client's Scan: BSSAdded/BSSRemoved, PropertiesChanged, ScanDone); one loopback HTTPS Ichnaea "
            + "server, requests counted there")
    let still = try await compareSittingStill(options)
    let perHour = 360.0 / Double(still.scans)
    func hourly(_ count: Int) -> String {
        still.scans == 360
            ? "\(count) an hour (an hour of scans: not scaled)"
            : String(format: "%.0f an hour (scaled)", Double(count) * perHour)
    }
    print(
        "   whereaboutsd (as installed, client: \(InstalledAuthorisation.user)): \(still.oursRequests) requests in "
            + "\(still.scans) scans = \(hourly(still.oursRequests)); \(still.oursFixes) fixes to its client; "
            + "\(still.oursOwnScans) scans of its own")
    print(
        "   GeoClue 2.6 ([wifi] enable=true, url= the same server, its TLS trusting the test CA; client: root, "
            + "agent registered): \(still.geoClueRequests) requests in \(still.scans) scans = \(hourly(still.geoClueRequests)); "
            + "\(still.geoClueFixes) fixes to its client; \(still.geoClueOwnScans) scans of its own; its cache "
            + "\(still.geoClueCache.hits) hits, \(still.geoClueCache.misses) misses")
    let ratio =
        still.geoClueRequests > 0
        ? String(format: "%.3f", Double(still.oursRequests) / Double(still.geoClueRequests))
        : "n/a (GeoClue asked nothing)"
    print("   ratio whereaboutsd / GeoClue: \(ratio); target ≤ 6 lookups an hour")
    if still.refusedScripted > 0 {
        print("   scripted scans refused (a service's own scan running) and retried: \(still.refusedScripted)")
    }
    if still.geoClueScanRefused {
        print("   GeoClue logged one of its own scans refused, after which it stops following ScanDone")
    }

    // 2.
    let authority = try TestCertificateAuthority.make()
    defer { authority.remove() }
    let server = try IchnaeaServer(certificates: authority)
    defer { server.stop() }
    let rig = try InstalledDaemon(url: server.url(), authority: authority)
    defer { rig.stop() }
    let runtime = mapsSwiftRuntime(try rig.pid) ? "the Swift runtime's shared libraries" : "the Swift runtime linked in"
    let fixes = try await measureFirstFixes(rig, server: server, authority: authority, trials: options.trials)
    print(
        "\n2. Start → first fix, exact client run as \(InstalledAuthorisation.user), wpa_supplicant holding a recent scan "
            + "(read on starting; no wait for a scan of ours); the daemon with \(runtime)")
    print("   from the cache, polkit's answer reused:  \(summary(fixes.fromCache))   target ≤ 50 ms")
    print("   from the cache, polkit asked (new app):  \(summary(fixes.fromCacheAskingPolkit))")
    print("   from the loopback server:                \(summary(fixes.fromServer))")
    print("   of which HTTPS round trip alone (libcurl, new connection each): \(summary(fixes.roundTrips))")
    print("   polkitd ran the rule \(fixes.polkitChecks) times for \(fixes.starts) Starts")

    // 3.
    let afterLookups = memory(try rig.pid)
    let stages = try await measureDaemonMemory(server: server, authority: authority)
    print("\n3. Daemon memory (RSS / private), as installed")
    print("   network positioning off, idle:                  \(mib(stages.off.rss)) / \(mib(stages.off.privateKiB))")
    print("   on, idle (neither polkit nor libcurl loaded):   \(mib(stages.idle.rss)) / \(mib(stages.idle.privateKiB))")
    print(
        "   on, after one Start, nothing to look up\(stages.startGotFix ? " (it got a fix!)" : ""): "
            + "\(mib(stages.afterStart.rss)) / \(mib(stages.afterStart.privateKiB))  (polkit asked: libpolkit-gobject and GLib loaded)"
    )
    print(
        "   on, after \(fixes.starts) fixes (\(fixes.fromServer.count) lookups; libcurl loaded): "
            + "\(mib(afterLookups.rss)) / \(mib(afterLookups.privateKiB))")
}

let options = BenchOptions.parse(Array(CommandLine.arguments.dropFirst()))
if options.filters {
    ScanFilters.run(options)
    exit(0)
}
Task { @BusActor in
    do {
        if options.scanCPU { try await ScanCPU.run(options) } else { try await run(options) }
        exit(0)
    } catch {
        print("wbnet: \(error)")
        exit(1)
    }
}
while true { pause() }
