import Foundation
import Glibc
import Loop
import Synchronization
import TestBasics
import TestSupport
import Testing

/// One real ModemManager for a whole suite (`@Suite(.sharingARealModemManager)`): the private bus, polkit's stand-in,
/// the emulated Quectel EG25 and Debian's ModemManager (``RealModemManager``) start once, about 5 s, before the
/// suite's first test and stop after its last; each test takes them through ``RealModemManagerSuite/shared`` and
/// starts its own daemon, in a folder of its own (its grants and caches), with ``RealModemManagerSuite/Rig``, which
/// first puts the modem back as it was (``RealModemManager/reset(sources:)``). Tests of such a suite must run one at a
/// time (`.serialized`).
struct RealModemManagerSuite: SuiteTrait, TestScoping {
    /// What the suite running shares.
    final class Shared: @unchecked Sendable {
        let bus: PrivateBus
        let modemManager: RealModemManager
        /// The location sources ModemManager set up by itself on enabling the modem (`MMModemLocationSource` bits).
        let initialSources: UInt32
        private let folders = Mutex(0)

        init() throws {
            bus = try PrivateBus(extraPolicy: try RealModemManager.busPolicy() + SensorProxyHarness.busPolicy())
            do {
                modemManager = try RealModemManager(bus: bus)
                initialSources = try modemManager.locationSetup().enabled
            } catch {
                bus.stop()
                throw error
            }
        }

        /// A new folder name for a test's daemon.
        func nextFolder() -> String {
            folders.withLock { count in
                count += 1
                return "test-\(count)"
            }
        }

        func stop() {
            modemManager.stop()
            bus.stop()
        }
    }

    /// The shared ModemManager of the suite running.
    @TaskLocal static var current: Shared?

    /// The shared ModemManager of the suite running; throws outside such a suite.
    static var shared: Shared {
        get throws {
            guard let current else { throw TestEnvironmentError("not in a suite sharing a real ModemManager") }
            return current
        }
    }

    var isRecursive: Bool { false }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let shared = try await onOwnThread { try Shared() }
        defer { shared.stop() }
        try await Self.$current.withValue(shared) { try await function() }
    }

    /// A test's daemon on the shared ModemManager's bus, with a loopback Ichnaea server answering for the cells.
    final class Rig: @unchecked Sendable {
        let shared: Shared
        let authority: TestCertificateAuthority
        let server: IchnaeaServer
        let harness: DaemonHarness
        var bus: PrivateBus { shared.bus }
        var modemManager: RealModemManager { shared.modemManager }

        /// Puts the modem back as it was, and prepares the daemon with `config` (not yet started) and the server,
        /// off the caller's thread.
        static func make(config: String) async throws -> Rig {
            let shared = try RealModemManagerSuite.shared
            return try await onOwnThread { try Rig(shared: shared, config: config) }
        }

        private init(shared: Shared, config: String) throws {
            self.shared = shared
            try shared.modemManager.reset(sources: shared.initialSources)
            authority = try TestCertificateAuthority.make()
            server = try IchnaeaServer(certificates: authority, latitude: 48.1371, longitude: 11.5754, accuracy: 1200)
            harness = try DaemonHarness(
                config: """
                    [network]
                    ca-file=\(authority.certificateFile.path)

                    [wifi]
                    url=\(server.url())

                    """ + config, bus: shared.bus, folder: shared.nextFolder())
        }

        /// The cell towers of every geolocate query received so far, in order, each value as text.
        func queriedTowers() throws -> [[String: String]] {
            try server.geolocateQueries().flatMap { IchnaeaServer.cellTowers(in: $0.body) }
        }

        /// Waits for a query for the cell `cellID` and returns the last such tower.
        func tower(_ cellID: UInt32, radio: String) throws -> [String: String] {
            var towers: [[String: String]] = []
            try Wait.until("a query for the \(radio) cell \(cellID)\n\(modemManager.log)", timeout: 20) {
                towers = try queriedTowers().filter { $0["radioType"] == radio && $0["cellId"] == "\(cellID)" }
                return !towers.isEmpty
            }
            return towers[towers.count - 1]
        }

        /// Waits until the emulated receiver is on (`true`) or off.
        func waitForReceiver(_ on: Bool) throws {
            try Wait.until("the receiver \(on ? "on" : "off")\n\(modemManager.log)", timeout: 20) {
                try modemManager.receiver().on == on
            }
        }

        /// Waits until ModemManager's location setup is `enabled` with `signals`.
        func waitForSetup(_ enabled: UInt32, signals: Bool, _ what: String) throws {
            var setup = (enabled: UInt32(0), signals: false)
            do {
                try Wait.until(what, timeout: 20) {
                    setup = try modemManager.locationSetup()
                    return setup == (enabled, signals)
                }
            } catch {
                throw TestEnvironmentError("\(error); the setup is \(setup)\n\(harness.daemonLog)")
            }
        }

        deinit {
            harness.stop()
            server.stop()
        }
    }
}

extension Trait where Self == RealModemManagerSuite {
    /// One real ModemManager for the whole suite; see ``RealModemManagerSuite``.
    static var sharingARealModemManager: Self { RealModemManagerSuite() }
}

/// ModemManager's location sources, as `MMModemLocationSource` bits.
enum ModemLocationSource {
    static let threeGPPCell: UInt32 = 1
    static let gpsNMEA: UInt32 = 4
}
