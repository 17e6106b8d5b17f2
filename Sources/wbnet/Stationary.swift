import Loop
import WhereaboutsCore
import WhereaboutsProviders

/// SplitMix64: a small seeded generator, so that every run simulates the same hour.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A machine that sits still: `strong` access points whose signals jitter by up to ±`jitter` dBm from scan to
/// scan, and `weak` ones around −88 dBm, each heard in about half the scans.
struct StationaryPlace {
    var strong = 12
    var weak = 10
    var jitter = 8

    func scans(_ count: Int, seed: UInt64) -> [[AccessPoint]] {
        var generator = SeededGenerator(state: seed)
        let means = (0..<strong).map { -45 - 3 * $0 }
        return (0..<count).map { _ in
            var scan: [AccessPoint] = []
            for (index, mean) in means.enumerated() {
                let signal = mean + Int.random(in: -jitter...jitter, using: &generator)
                scan.append(AccessPoint(bssid: bssid(index), ssid: Array("net\(index)".utf8), signal: signal))
            }
            for index in 0..<weak where Bool.random(using: &generator) {
                let signal = -84 - Int.random(in: 0...8, using: &generator)
                scan.append(AccessPoint(bssid: bssid(100 + index), ssid: Array("far\(index)".utf8), signal: signal))
            }
            return scan
        }
    }

    private func bssid(_ index: Int) -> BSSID {
        BSSID(octets: [0x00, 0x24, 0x01, 0x00, UInt8(index >> 8), UInt8(index & 0xff)])!
    }
}

/// Scans handed to the provider by the benchmark, as wpa_supplicant would after each `ScanDone`.
@BusActor
final class ScriptedScanner: AccessPointScanner {
    let backend = "scripted"
    let isAvailable = true
    var onScan: (@BusActor ([AccessPoint]) -> Void)?
    var onAvailabilityChanged: (@BusActor () -> Void)?
    func start(interval: Duration) {}
    func stop() {}
}

/// A transport that answers every lookup at once, counting them.
final class CountingTransport: HTTPTransport, @unchecked Sendable {
    private(set) var count = 0
    func post(_ request: HTTPRequest) async -> Result<HTTPResponse, HTTPFailure> {
        await MainCounter.increment(self)
        return .success(HTTPResponse(status: 200, body: Array(#"{"location":{"lat":52.52,"lng":13.405},"accuracy":30}"#.utf8)))
    }
    @BusActor fileprivate func bump() { count += 1 }
}

@BusActor
private enum MainCounter {
    static func increment(_ transport: CountingTransport) { transport.bump() }
}

/// GeoClue 2.8's Wi-Fi rule, as `gclue-wifi.c` has it: access points at or below −90 dBm are ignored; after a
/// scan, the query is refreshed when the list of access points changed (one appeared or went); its cache answers
/// when the sorted list of addresses is the same as an entry's and every signal lies within ±5 dBm of it.
struct GeoClueWiFiRule {
    private var previous: Set<BSSID> = []
    private var cache: [[BSSID]: [[BSSID: Int]]] = [:]
    private(set) var requests = 0

    mutating func scanned(_ scan: [AccessPoint]) {
        let heard = scan.filter { $0.signal > -90 && !$0.ssid.isEmpty }
        let addresses = Set(heard.map(\.bssid))
        defer { previous = addresses }
        guard addresses != previous, addresses.count >= 2 else { return }
        let key = addresses.sorted()
        let signals = Dictionary(heard.map { ($0.bssid, $0.signal) }, uniquingKeysWith: max)
        if let entries = cache[key], entries.contains(where: { entry in
            entry.allSatisfy { abs((signals[$0.key] ?? -200) - $0.value) <= 5 }
        }) {
            return
        }
        requests += 1
        cache[key, default: []].append(signals)
    }
}

/// One simulated hour of scans every 10 s: lookups by Whereabouts' Wi-Fi provider (the real one, with a
/// scripted scanner and a counting transport, on a manual clock) and by GeoClue's rule.
@BusActor
func stationaryHour(seed: UInt64) async -> (ours: Int, geoClue: Int) {
    let scans = StationaryPlace().scans(360, seed: seed)
    let clock = ManualClock()
    let scanner = ScriptedScanner()
    let transport = CountingTransport()
    let provider = WiFiProvider(
        scanner: scanner, transport: transport, url: "https://localhost/v1/geolocate",
        loadCache: { PositionCache() },
        saveCache: { _ in }, submitter: nil, clock: clock, logger: SilentLogger())
    provider.demandChanged(.exact)
    provider.start()
    var geoClue = GeoClueWiFiRule()
    for scan in scans {
        scanner.onScan?(scan)
        geoClue.scanned(scan)
        // Let the lookup, if one was sent, be answered before the next scan.
        for _ in 0..<20 { await Task.yield() }
        clock.advance(by: .seconds(10))
    }
    provider.stop()
    return (transport.count, geoClue.requests)
}

struct SilentLogger: Logger {
    func log(_ priority: LogPriority, _ message: String) {}
}
