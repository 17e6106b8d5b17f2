import DBus
import Foundation
import Loop
import Synchronization
import TestBasics
import TestSupport
import WhereaboutsCore
import WhereaboutsProviders
import WiFi

extension BusActor {
    /// Runs `body` on the bus thread.
    static func run<T: Sendable>(_ body: @BusActor () throws -> T) async rethrows -> T {
        try await body()
    }
}

/// A logger that keeps its lines, for checking what was logged.
final class RecordingLogger: Logger {
    private let lines = Mutex<[String]>([])

    func log(_ priority: LogPriority, _ message: String) {
        lines.withLock { $0.append("<\(priority.rawValue)>\(message)") }
    }

    /// Every line so far, each prefixed with `<N>`, its syslog priority.
    var text: String { lines.withLock { $0.joined(separator: "\n") } }

    /// True when a line at `priority` contains `fragment`.
    func contains(_ fragment: String, at priority: LogPriority) -> Bool {
        lines.withLock { $0.contains { $0.hasPrefix("<\(priority.rawValue)>") && $0.contains(fragment) } }
    }
}

/// A scanner under test, with everything it reported.
@BusActor
final class ScanRecorder<Scanner: AccessPointScanner> {
    let scanner: Scanner
    private(set) var scans: [[AccessPoint]] = []
    private(set) var availabilityChanges = 0
    /// When set, the scanner is stopped from within the callback of this scan (counting from the first):
    /// no further round can begin, so the number of `Scan` calls is exact.
    var stopAtScan: Int?

    init(_ scanner: Scanner) {
        self.scanner = scanner
        scanner.onScan = { [weak self] points in
            guard let self else { return }
            self.scans.append(points)
            if let stop = self.stopAtScan, self.scans.count >= stop {
                self.stopAtScan = nil
                self.scanner.stop()
            }
        }
        scanner.onAvailabilityChanged = { [weak self] in self?.availabilityChanges += 1 }
    }

    /// Waits, without blocking the bus thread, until `condition` holds.
    func waitUntil(
        _ what: String, timeout: Duration = .seconds(15), _ condition: @BusActor () throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while try !condition() {
            guard ContinuousClock.now < deadline else {
                throw TestEnvironmentError("timed out after \(timeout) waiting for \(what)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The `number`th scan reported (counting from 1), once it is.
    func scan(_ number: Int, timeout: Duration = .seconds(15)) async throws -> [AccessPoint] {
        try await waitUntil("scan \(number) to be reported", timeout: timeout) { scans.count >= number }
        return scans[number - 1]
    }

    /// The first scan reported after `count` scans for which `condition` holds.
    func scan(after count: Int, where what: String, _ condition: @escaping @Sendable ([AccessPoint]) -> Bool)
        async throws
        -> [AccessPoint]
    {
        var found: [AccessPoint]?
        try await waitUntil("a scan where \(what)") {
            found = scans.dropFirst(count).first(where: condition)
            return found != nil
        }
        return found!
    }
}

/// Six octets for a BSSID whose last octet is `last`.
func octets(_ last: UInt8) -> [UInt8] { [0x02, 0x11, 0x22, 0x33, 0x44, last] }

func bssid(_ last: UInt8) -> BSSID { BSSID(octets: octets(last))! }

/// The BSSIDs of `points`, sorted.
func bssids(_ points: [AccessPoint]) -> [BSSID] { points.map(\.bssid).sorted() }

extension [AccessPoint] {
    func point(_ last: UInt8) -> AccessPoint? { first { $0.bssid == bssid(last) } }
}

/// A private bus whose policy admits the mocks, and a connection to it for the scanner under test.
struct Stand {
    /// The round timeout of scanners whose tests are not about it: long enough that a stand-in slowed by a
    /// loaded machine still reports within the round, so that what a round merges does not depend on timing.
    static let roundTimeout: Duration = .seconds(60)

    let bus: PrivateBus
    let logger = RecordingLogger()

    init() throws {
        bus = try PrivateBus(extraPolicy: WPASupplicantMock.busPolicy + NetworkManagerMock.busPolicy)
    }

    @BusActor
    func connect() throws -> Connection {
        try Connection.open(address: bus.address)
    }

    func stop() { bus.stop() }
}
