import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import WhereaboutsCore

/// `wbnet --scan-cpu`: the CPU each service spends on a scan of 60 access points, as installed: whereaboutsd with the
/// moving networks left out (the default), whereaboutsd with them kept (`ignore-moving-networks=false`, the checks
/// each scan had before), and GeoClue 2.6's Wi-Fi source, each on a private bus of its own with a wpa_supplicant
/// stand-in, fed the same scans with a client running.
enum ScanCPU {
    /// The scans fed to each service.
    static let scanCount = 100
    /// How far apart they are fed (each service takes every `ScanDone`, and GeoClue asks a second after one that
    /// changed the access points it keeps).
    static let spacing = Duration.milliseconds(1500)

    /// What a service used over the scans: its own CPU and its bus daemon's, in seconds.
    struct Use {
        var service = 0.0
        var bus = 0.0
    }

    /// A station sitting still: the 60 access points of ``ScanFilters/scans(count:seed:)``'s first scan, each
    /// next scan moving every signal by up to ±3 dB.
    static func scans(seed: UInt64) -> [[WPASupplicantMock.BSS]] {
        let first = ScanFilters.scans(count: 1, seed: seed)[0]
        var random = SeededGenerator(seed: seed &+ 1)
        return (0..<scanCount).map { _ in
            first.map { point in
                var moved = point
                moved.signal = point.signal + Int(random.next() % 7) - 3
                return moved.standInBSS
            }
        }
    }

    @BusActor
    static func run(_ options: BenchOptions) async throws {
        let scans = Self.scans(seed: options.seed)
        print(
            "wbnet --scan-cpu: \(scans.count) scans of 60 access points (48 fixed, 6 of them locally administered; 4 of "
                + "a train; 4 hotspots; 2 hidden; 2 opted out; signals moving ±3 dB), fed \(spacing) apart with a "
                + "client running; each service on a private bus of its own; load average \(Machine.loadAverage())")
        let authority = try TestCertificateAuthority.make()
        defer { authority.remove() }
        let server = try IchnaeaServer(certificates: authority)
        defer { server.stop() }
        var figures: [(String, Use)] = []
        for (name, wifi) in [
            ("whereaboutsd, moving networks left out (default)", ""),
            ("whereaboutsd, moving networks kept (the checks before)", "ignore-moving-networks=false"),
        ] {
            let rig = try InstalledDaemon(url: server.url(), authority: authority, wifi: wifi)
            defer { rig.stop() }
            let app = try AppClient.hold(on: rig.bus, app: InstalledDaemon.app)
            defer { app.stop() }
            figures.append((name, try await use(of: try rig.pid, bus: rig.bus.pid, fed: scans, to: rig.wpa)))
        }
        let geoClue = try GeoClueWiFiRig(
            url: server.url() + "?key=geoclue", authority: authority, apps: [InstalledDaemon.app], scanDelay: 1)
        defer { geoClue.stop() }
        try geoClue.start()
        let agent = try await GeoClueTestAgent.registered(on: geoClue.bus, as: GeoClueHarness.agentId)
        let client = try await GeoClueTestClient(bus: geoClue.bus)
        defer {
            client.close()
            agent.close()
        }
        _ = try await client.startedClient(desktopId: InstalledDaemon.app, level: 8)
        guard let pid = geoClue.process?.pid else { throw TestEnvironmentError("GeoClue is not running") }
        figures.append(
            ("GeoClue 2.6 (Wi-Fi source)", try await use(of: pid, bus: geoClue.bus.pid, fed: scans, to: geoClue.wpa)))
        let perScan = { (seconds: Double) in seconds / Double(scans.count - 1) * 1e6 }
        for (name, use) in figures {
            print(
                String(
                    format: "   %@: %.0f µs a scan, its bus daemon %.0f µs", name, perScan(use.service),
                    perScan(use.bus)))
        }
        if let geoClueUse = figures.last?.1, geoClueUse.service > 0 {
            print(
                String(
                    format: "   ratio whereaboutsd (default) / GeoClue: %.2f", figures[0].1.service / geoClueUse.service
                ))
        }
        let requests = try server.requests.filter { $0.path.hasPrefix(IchnaeaServer.geolocatePath) }
        print("   lookups at the server: \(requests.count) in all")
    }

    /// The CPU `pid` and the bus daemon `bus` used over `scans` after the first, fed to `mock` ``spacing`` apart.
    @BusActor
    private static func use(
        of pid: pid_t, bus: pid_t, fed scans: [[WPASupplicantMock.BSS]], to mock: WPASupplicantMock
    ) async throws -> Use {
        // The first scan is looked up; what follows is the place sitting still.
        _ = try await feed(scans[0], to: [mock])
        try await Task.sleep(for: .seconds(3))
        let before = Use(service: Machine.cpuSeconds(pid), bus: Machine.cpuSeconds(bus))
        let started = ContinuousClock.now
        for (index, scan) in scans.enumerated().dropFirst() {
            try await Task.sleep(until: started + spacing * (index - 1), clock: .continuous)
            _ = try await feed(scan, to: [mock])
        }
        try await Task.sleep(for: spacing)
        return Use(service: Machine.cpuSeconds(pid) - before.service, bus: Machine.cpuSeconds(bus) - before.bus)
    }
}
