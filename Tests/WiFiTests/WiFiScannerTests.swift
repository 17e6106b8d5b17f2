import DBus
import Foundation
import Glibc
import Loop
import LoopScheduling
import TestSupport
import Testing
import WhereaboutsCore
import WhereaboutsProviders
import WiFi

/// The Wi-Fi scanners in this process, against python-dbusmock stand-ins for wpa_supplicant (the project's
/// template) and NetworkManager (python-dbusmock's own) on a private bus. Serialized: the timings below assume
/// the machine is not also running the other tests' mocks.
@Suite("Wi-Fi scans through wpa_supplicant and NetworkManager", .serialized)
struct WiFiScannerTests {
    // MARK: wpa_supplicant

    @Test func everyInterfaceIsScannedAndTheirAccessPointsMerged() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let wpa = try WPASupplicantMock(bus: stand.bus, interfaces: ["wlan0", "wlan1"])
        defer { wpa.stop() }
        try wpa.setScanResults(
            "wlan0",
            [
                .init(bssid: octets(1), ssid: "north", signal: -50, frequency: 2412, age: 3),
                .init(bssid: octets(2), ssid: "both", signal: -70, frequency: 5180, age: 1),
            ])
        try wpa.setScanResults(
            "wlan1",
            [
                .init(bssid: octets(2), ssid: "both", signal: -60, frequency: 5180, age: 2),
                .init(bssid: octets(3), ssid: "", signal: -80, frequency: 2437, age: 0),
            ])
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let recorder = await BusActor.run {
            ScanRecorder(
                WPASupplicantScanner(
                    connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                    roundTimeout: Stand.roundTimeout))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        #expect(await scanner.isAvailable)
        #expect(await scanner.interfaces.count == 2)
        #expect(await recorder.scans.isEmpty)
        #expect(try wpa.scanCount("wlan0") == 0, "following is not scanning")

        await scanner.start(interval: .seconds(60))
        let scan = try await recorder.scan(1)
        #expect(bssids(scan) == [bssid(1), bssid(2), bssid(3)], "each BSSID once, from both interfaces")
        let north = try #require(scan.point(1))
        #expect(north.ssid == Array("north".utf8))
        #expect(north.signal == -50)
        #expect(north.frequency == 2412)
        #expect(north.age == .seconds(3))
        #expect(scan.point(2)?.signal == -60, "the interface that hears an access point better wins")
        #expect(scan.point(3)?.ssid == [], "a hidden network has an empty SSID")
        #expect(try wpa.scanCount("wlan0") == 1)
        #expect(try wpa.scanCount("wlan1") == 1)
        await scanner.stop()
    }

    @Test func anInterfaceAddedWhileRunningIsScannedAndOneRemovedIsDropped() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let wpa = try WPASupplicantMock(bus: stand.bus, interfaces: ["wlan0"], scanDelay: 300)
        defer { wpa.stop() }
        try wpa.setScanResults("wlan0", [.init(bssid: octets(1), ssid: "a", signal: -50)])
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let recorder = await BusActor.run {
            ScanRecorder(
                WPASupplicantScanner(
                    connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                    roundTimeout: Stand.roundTimeout))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        await scanner.start(interval: .milliseconds(500))
        #expect(bssids(try await recorder.scan(1)) == [bssid(1)])

        try wpa.addInterface("wlan1")
        try wpa.setScanResults("wlan1", [.init(bssid: octets(9), ssid: "plugged in", signal: -40)])
        let seen = await recorder.scans.count
        let withBoth = try await recorder.scan(after: seen, where: "the new interface's access point is in") {
            $0.point(9) != nil
        }
        #expect(bssids(withBoth) == [bssid(1), bssid(9)])
        #expect(try wpa.scanCount("wlan1") >= 1)
        #expect(await scanner.interfaces.count == 2)

        try wpa.removeInterface("wlan1")
        try await recorder.waitUntil("wlan1 to be dropped") { scanner.interfaces.count == 1 }
        let after = await recorder.scans.count
        let withOne = try await recorder.scan(after + 1)
        #expect(bssids(withOne) == [bssid(1)], "a removed interface's access points are gone")
        #expect(await scanner.isAvailable)
        await scanner.stop()
    }

    @Test func p2pDeviceInterfacesAreLeftOut() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let wpa = try WPASupplicantMock(bus: stand.bus, interfaces: ["wlan0", "p2p-dev-wlan0"])
        defer { wpa.stop() }
        try wpa.setScanResults("wlan0", [.init(bssid: octets(1), ssid: "a", signal: -50)])
        try wpa.setScanResults("p2p-dev-wlan0", [.init(bssid: octets(7), ssid: "direct", signal: -30)])
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let recorder = await BusActor.run {
            ScanRecorder(
                WPASupplicantScanner(
                    connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                    roundTimeout: Stand.roundTimeout))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        #expect(await scanner.interfaces.map(\.rawValue) == [try wpa.path(of: "wlan0")])
        await scanner.start(interval: .seconds(60))
        #expect(bssids(try await recorder.scan(1)) == [bssid(1)])

        // Hot-plugged: a P2P device, then a radio, whose arrival is the event waited for.
        try wpa.addInterface("p2p-dev-wlan1")
        let wlan1 = try wpa.addInterface("wlan1")
        try await recorder.waitUntil("wlan1 to be added") { scanner.interfaces.count == 2 }
        #expect(await scanner.interfaces.map(\.rawValue) == [try wpa.path(of: "wlan0"), wlan1])
        _ = try await recorder.scan(2)
        #expect(try wpa.scanCount("p2p-dev-wlan0") == 0)
        #expect(try wpa.scanCount("p2p-dev-wlan1") == 0)
        #expect(stand.logger.contains("P2P device p2p-dev-wlan1", at: .info), "\(stand.logger.text)")
        await scanner.stop()
    }

    @Test func nothingIsScannedWhileStopped() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let wpa = try WPASupplicantMock(bus: stand.bus, interfaces: ["wlan0"])
        defer { wpa.stop() }
        try wpa.setScanResults("wlan0", [.init(bssid: octets(1), ssid: "a", signal: -50)])
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        // Two scanners on two connections: while one is stopped, the other's rounds are the events waited for,
        // and its ScanDone signals reach the stopped one too.
        let other = try await stand.connect()
        defer { Task { @BusActor in other.close() } }
        let (subject, witness) = await BusActor.run {
            (
                ScanRecorder(
                    WPASupplicantScanner(
                        connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                        roundTimeout: Stand.roundTimeout)
                ),
                ScanRecorder(
                    WPASupplicantScanner(
                        connection: other, clock: SystemClock(), timers: EventLoop.main, logger: RecordingLogger(),
                        roundTimeout: Stand.roundTimeout)
                )
            )
        }
        await subject.scanner.ready()
        await witness.scanner.ready()

        // Never started: only the witness's two rounds scan.
        await BusActor.run {
            witness.stopAtScan = 2
            witness.scanner.start(interval: .milliseconds(300))
        }
        _ = try await witness.scan(2)
        #expect(try wpa.scanCount("wlan0") == 2)
        #expect(await subject.scans.isEmpty, "a scanner that was never started reports nothing")

        // Started for two rounds, then stopped; what wpa_supplicant held on starting is reported first.
        await BusActor.run {
            subject.stopAtScan = 3
            subject.scanner.start(interval: .milliseconds(300))
        }
        _ = try await subject.scan(3)
        #expect(try wpa.scanCount("wlan0") == 4)

        // The witness's next two rounds (after what is held) take longer than the subject's interval.
        await BusActor.run {
            witness.stopAtScan = 5
            witness.scanner.start(interval: .milliseconds(300))
        }
        _ = try await witness.scan(5)
        #expect(try wpa.scanCount("wlan0") == 6, "the stopped scanner asked for no scan")
        #expect(await subject.scans.count == 3, "and reported none of the witness's")
    }

    @Test func aRefusedScanStillReportsTheOtherInterface() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let wpa = try WPASupplicantMock(bus: stand.bus, interfaces: ["wlan0", "wlan1"])
        defer { wpa.stop() }
        try wpa.setScanResults("wlan0", [.init(bssid: octets(1), ssid: "busy", signal: -50)])
        try wpa.setScanResults("wlan1", [.init(bssid: octets(2), ssid: "free", signal: -55)])
        try wpa.setBusy("wlan0", true)
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let recorder = await BusActor.run {
            ScanRecorder(
                WPASupplicantScanner(
                    connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                    roundTimeout: .seconds(10)))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        let began = ContinuousClock.now
        await scanner.start(interval: .seconds(60))
        let scan = try await recorder.scan(1)
        #expect(bssids(scan) == [bssid(2)])
        #expect(ContinuousClock.now - began < .seconds(5), "the refused interface is not waited for")
        #expect(try wpa.scanCount("wlan0") == 1, "wlan0 was asked and refused")
        #expect(stand.logger.contains("ScanError", at: .debug), "\(stand.logger.text)")
        #expect(stand.logger.contains("Scan request rejected", at: .debug))
        await scanner.stop()
    }

    @Test func aRoundReportsAfterItsTimeoutWhenAnInterfaceNeverFinishes() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let wpa = try WPASupplicantMock(bus: stand.bus, interfaces: ["wlan0", "wlan1"])
        defer { wpa.stop() }
        try wpa.setScanResults("wlan0", [.init(bssid: octets(1), ssid: "slow", signal: -50)])
        try wpa.setScanResults("wlan1", [.init(bssid: octets(2), ssid: "quick", signal: -55)])
        try wpa.setScanDelay("wlan0", milliseconds: 60_000)
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let recorder = await BusActor.run {
            ScanRecorder(
                WPASupplicantScanner(
                    connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                    roundTimeout: .seconds(1)))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        let began = ContinuousClock.now
        await scanner.start(interval: .seconds(60))
        let scan = try await recorder.scan(1)
        #expect(ContinuousClock.now - began >= .seconds(1))
        #expect(bssids(scan) == [bssid(2)], "the interface that reported")
        #expect(stand.logger.contains("did not report within", at: .debug), "\(stand.logger.text)")
        await scanner.stop()
    }

    @Test func aScanSomeoneElseAskedForIsUsed() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let wpa = try WPASupplicantMock(bus: stand.bus, interfaces: ["wlan0"])
        defer { wpa.stop() }
        try wpa.setScanResults("wlan0", [.init(bssid: octets(1), ssid: "a", signal: -50)])
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let recorder = await BusActor.run {
            ScanRecorder(
                WPASupplicantScanner(
                    connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                    roundTimeout: Stand.roundTimeout))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        await scanner.start(interval: .seconds(60))
        #expect(bssids(try await recorder.scan(1)) == [bssid(1)])

        try wpa.setScanResults("wlan0", [.init(bssid: octets(2), ssid: "b", signal: -40)])
        try wpa.scan("wlan0")
        #expect(bssids(try await recorder.scan(2)) == [bssid(2)])
        #expect(try wpa.scanCount("wlan0") == 2, "one scan of ours, one of the other client's")
        await scanner.stop()
    }

    @Test func whatWPASupplicantAlreadyHoldsIsReportedOnStarting() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let wpa = try WPASupplicantMock(bus: stand.bus, interfaces: ["wlan0"], scanDelay: 100)
        defer { wpa.stop() }
        // Another client's scan leaves wpa_supplicant holding access point 1, seen just now, and 2, seen 40 s ago.
        try wpa.setScanResults(
            "wlan0",
            [
                .init(bssid: octets(1), ssid: "recent", signal: -50, age: 2),
                .init(bssid: octets(2), ssid: "stale", signal: -55, age: 40),
            ])
        try wpa.scan("wlan0")
        try await eventuallyHolds(wpa, count: 2)
        // Our own scan will find access point 3 only.
        try wpa.setScanResults("wlan0", [.init(bssid: octets(3), ssid: "new", signal: -45)])
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let recorder = await BusActor.run {
            ScanRecorder(
                WPASupplicantScanner(
                    connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                    roundTimeout: Stand.roundTimeout))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        await scanner.start(interval: .seconds(60))
        #expect(bssids(try await recorder.scan(1)) == [bssid(1)], "what is held, without what is stale, comes first")
        #expect(bssids(try await recorder.scan(2)) == [bssid(3)], "then our scan")
        await scanner.stop()
    }

    /// Waits until the stand-in's wlan0 holds `count` BSSs.
    @concurrent
    private func eventuallyHolds(_ wpa: WPASupplicantMock, count: Int) async throws {
        let path = try wpa.path(of: "wlan0")
        try await eventually("wlan0 to hold \(count) BSSs") {
            let output = try WPASupplicantMock.busctl(
                wpa.bus, ["get-property", WPASupplicantMock.busName, path, "fi.w1.wpa_supplicant1.Interface", "BSSs"])
            return output.output.hasPrefix("ao \(count) ")
        }
    }

    @Test func aShorterIntervalTakesEffectBeforeTheLongerOneRunsOut() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let wpa = try WPASupplicantMock(bus: stand.bus, interfaces: ["wlan0"])
        defer { wpa.stop() }
        try wpa.setScanResults("wlan0", [.init(bssid: octets(1), ssid: "a", signal: -50)])
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let recorder = await BusActor.run {
            ScanRecorder(
                WPASupplicantScanner(
                    connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                    roundTimeout: Stand.roundTimeout))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        await scanner.start(interval: .seconds(60))
        _ = try await recorder.scan(1)
        await scanner.start(interval: .seconds(120))
        #expect(try wpa.scanCount("wlan0") == 1, "a second start only changes the interval")
        await scanner.start(interval: .milliseconds(300))
        _ = try await recorder.scan(3, timeout: .seconds(10))
        #expect(try wpa.scanCount("wlan0") >= 3)
        await scanner.stop()
    }

    @Test func aMalformedBSSIsLeftOut() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let wpa = try WPASupplicantMock(bus: stand.bus, interfaces: ["wlan0"])
        defer { wpa.stop() }
        let good = WPASupplicantMock.BSS(bssid: octets(1), ssid: "good", signal: -50)
        try wpa.setScanResults(
            "wlan0",
            [
                good,
                .init(bssid: [1, 2, 3, 4, 5], ssid: "short", signal: -50),
                good.with("BSSID", .bytes(octets(3))).with("Signal", .string("strong")),
                good.with("BSSID", .bytes(octets(4))).with("SSID", nil),
                good.with("BSSID", .bytes(octets(5))).with("Frequency", .uint32(2412)),
                good.with("BSSID", .string("02:11:22:33:44:06")),
            ])
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let recorder = await BusActor.run {
            ScanRecorder(
                WPASupplicantScanner(
                    connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                    roundTimeout: Stand.roundTimeout))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        await scanner.start(interval: .seconds(60))
        #expect(bssids(try await recorder.scan(1)) == [bssid(1)])
        let logger = stand.logger
        #expect(logger.contains("BSSID has 5 bytes, not 6", at: .warning), "\(logger.text)")
        #expect(logger.contains("Signal is s, not n", at: .warning))
        #expect(logger.contains("SSID is missing, not ay", at: .warning))
        #expect(logger.contains("Frequency is u, not q", at: .warning))
        #expect(logger.contains("BSSID is s, not ay", at: .warning))
        await scanner.stop()
    }

    @Test func signalsFromAnotherConnectionAreIgnored() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let wpa = try WPASupplicantMock(bus: stand.bus, interfaces: ["wlan0"])
        defer { wpa.stop() }
        try wpa.setScanResults("wlan0", [.init(bssid: octets(1), ssid: "a", signal: -50)])
        let wlan0 = try wpa.path(of: "wlan0")
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let impostor = try await stand.connect()
        defer { Task { @BusActor in impostor.close() } }
        // Another part of the process listening to every signal makes the bus route the impostor's here too, so
        // only the scanner's own check of the sender keeps them out.
        _ = try await connection.subscribe(SignalMatch()) { _ in }
        let recorder = await BusActor.run {
            ScanRecorder(
                WPASupplicantScanner(
                    connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                    roundTimeout: Stand.roundTimeout))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        await scanner.start(interval: .seconds(60))
        _ = try await recorder.scan(1)

        await BusActor.run {
            impostor.emitSignal(
                path: ObjectPath(WPASupplicantMock.rootPath)!, interface: "fi.w1.wpa_supplicant1",
                member: "InterfaceAdded",
                arguments: [.objectPath(ObjectPath("/fi/w1/wpa_supplicant1/Interfaces/99")!), .vardict([:])])
            impostor.emitSignal(
                path: ObjectPath(WPASupplicantMock.rootPath)!, interface: "fi.w1.wpa_supplicant1",
                member: "InterfaceRemoved", arguments: [.objectPath(ObjectPath(wlan0)!)])
            impostor.emitSignal(
                path: ObjectPath(wlan0)!, interface: "fi.w1.wpa_supplicant1.Interface", member: "ScanDone",
                arguments: [.boolean(true)])
            impostor.flush()
        }
        // The real wpa_supplicant's next signal comes after the impostor's.
        let wlan1 = try wpa.addInterface("wlan1")
        try wpa.setScanResults("wlan1", [.init(bssid: octets(2), ssid: "b", signal: -60)])
        try await recorder.waitUntil("wlan1 to be added") { scanner.interfaces.count >= 2 }
        #expect(await scanner.interfaces.map(\.rawValue) == [wlan0, wlan1])
        let second = try await recorder.scan(2)
        #expect(
            bssids(second) == [bssid(1), bssid(2)],
            "the second report is the round wlan1 started, not the fake ScanDone's")
        #expect(try wpa.scanCount("wlan0") == 2)
        await scanner.stop()
    }

    // MARK: Choosing the backend

    @Test func wpaSupplicantLeavingAndComingBackIsFollowed() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        var wpa = try WPASupplicantMock(bus: stand.bus, interfaces: ["wlan0"])
        defer { wpa.stop() }
        try wpa.setScanResults("wlan0", [.init(bssid: octets(1), ssid: "a", signal: -50)])
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let recorder = await BusActor.run {
            ScanRecorder(
                WiFiScanner(connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        #expect(await scanner.backend == "wpa_supplicant")
        #expect(await scanner.isAvailable)
        await scanner.start(interval: .milliseconds(500))
        #expect(bssids(try await recorder.scan(1)) == [bssid(1)])

        let changes = await recorder.availabilityChanges
        wpa.stop()
        try await recorder.waitUntil("wpa_supplicant's departure") { !scanner.isAvailable }
        #expect(await scanner.backend == "none")
        #expect(await recorder.availabilityChanges > changes)

        wpa = try WPASupplicantMock(bus: stand.bus, interfaces: ["wlan0"])
        try wpa.setScanResults("wlan0", [.init(bssid: octets(2), ssid: "b", signal: -45)])
        try await recorder.waitUntil("wpa_supplicant's return") { scanner.isAvailable }
        #expect(await scanner.backend == "wpa_supplicant")
        let seen = await recorder.scans.count
        _ = try await recorder.scan(after: seen, where: "the returned wpa_supplicant's access point is in") {
            $0.point(2) != nil
        }
        #expect(try wpa.scanCount("wlan0") >= 1, "the started scanner scans with the wpa_supplicant that came back")
        await scanner.stop()
    }

    @Test func withoutWPASupplicantNetworkManagerIsUsed() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let nm = try NetworkManagerMock(bus: stand.bus)
        defer { nm.stop() }
        let wlan0 = try nm.addWiFiDevice("wlan0", interface: "wlan0")
        try nm.addEthernetDevice("eth0", interface: "eth0")
        try nm.addAccessPoint(device: wlan0, name: "ap1", ssid: "strong", hwAddress: "02:11:22:33:44:01", strength: 100)
        try nm.addAccessPoint(
            device: wlan0, name: "ap2", ssid: "middle", hwAddress: "02:11:22:33:44:02", frequency: 5180, strength: 50)
        try nm.addAccessPoint(device: wlan0, name: "ap3", ssid: "faint", hwAddress: "02:11:22:33:44:03", strength: 0)
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let recorder = await BusActor.run {
            let networkManager = NetworkManagerScanner(
                connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                settleDelay: .milliseconds(300))
            let wpaSupplicant = WPASupplicantScanner(
                connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                roundTimeout: Stand.roundTimeout)
            return ScanRecorder(
                WiFiScanner(wpaSupplicant: wpaSupplicant, networkManager: networkManager, logger: stand.logger))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        #expect(await scanner.backend == "NetworkManager")
        #expect(await scanner.isAvailable)
        #expect(await scanner.networkManager.wifiDevices.map(\.rawValue) == [wlan0], "the wired device is left alone")

        await scanner.start(interval: .seconds(60))
        let scan = try await recorder.scan(1)
        #expect(bssids(scan) == [bssid(1), bssid(2), bssid(3)])
        #expect(scan.point(1)?.signal == -40, "100 %")
        #expect(scan.point(2)?.signal == -70, "50 %")
        #expect(scan.point(3)?.signal == -100, "0 %")
        #expect(scan.point(2)?.frequency == 5180)
        #expect(scan.point(2)?.ssid == Array("middle".utf8))
        // The template's LastSeen is 1: one second after boot.
        let boot = bootSeconds()
        let age = try #require(scan.point(1)?.age)
        #expect(age >= .seconds(boot - 3) && age <= .seconds(boot), "\(age), booted \(boot) s ago")
        #expect(try nm.requestScanCount(wlan0) == 1)

        // A Wi-Fi device that appears while scanning is scanned too.
        let wlan1 = try nm.addWiFiDevice("wlan1", interface: "wlan1")
        try nm.addAccessPoint(device: wlan1, name: "ap9", ssid: "dongle", hwAddress: "02:11:22:33:44:09", strength: 80)
        let withBoth = try await recorder.scan(after: 1, where: "the new device's access point is in") {
            $0.point(9) != nil
        }
        #expect(withBoth.point(9)?.signal == -52, "80 %")
        #expect(withBoth.count == 4)
        await scanner.stop()
    }

    @Test func networkManagerScansEndWhenLastScanChanges() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let nm = try NetworkManagerMock(bus: stand.bus)
        defer { nm.stop() }
        let wlan0 = try nm.addWiFiDevice("wlan0", interface: "wlan0")
        try nm.addLastScan(wlan0, 1000)
        try nm.addAccessPoint(device: wlan0, name: "ap1", ssid: "a", hwAddress: "02:11:22:33:44:01", strength: 70)
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let recorder = await BusActor.run {
            ScanRecorder(
                NetworkManagerScanner(
                    connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                    settleDelay: .milliseconds(200),
                    roundTimeout: .seconds(20)))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        await scanner.start(interval: .seconds(60))
        try Wait.until("RequestScan", timeout: 10) { try nm.requestScanCount(wlan0) == 1 }
        // Far longer than the settle delay: a device with LastScan is waited for.
        try await Task.sleep(for: .seconds(1))
        #expect(await recorder.scans.isEmpty, "no report before LastScan changes")
        try nm.setLastScan(wlan0, 2000)
        let scan = try await recorder.scan(1, timeout: .seconds(5))
        #expect(bssids(scan) == [bssid(1)])
        #expect(scan.point(1)?.signal == -58, "70 %")

        // A LastScan change nobody here asked for (NetworkManager's own scan) is reported too.
        try nm.addAccessPoint(device: wlan0, name: "ap2", ssid: "b", hwAddress: "02:11:22:33:44:02", strength: 90)
        try nm.setLastScan(wlan0, 3000)
        #expect(bssids(try await recorder.scan(2)) == [bssid(1), bssid(2)])
        #expect(try nm.requestScanCount(wlan0) == 1)
        await scanner.stop()
    }

    @Test func withNeitherServiceTheBackendIsNone() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let recorder = await BusActor.run {
            ScanRecorder(
                WiFiScanner(connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        #expect(await scanner.backend == "none")
        #expect(await !scanner.isAvailable)
        await scanner.start(interval: .milliseconds(200))
        await scanner.stop()
        #expect(await recorder.scans.isEmpty)
        #expect(stand.logger.contains("wpa_supplicant is not on the bus", at: .info), "\(stand.logger.text)")
        #expect(stand.logger.contains("NetworkManager is not on the bus", at: .info))
    }

    @Test func wpaSupplicantIsNeverActivated() async throws {
        let stand = try Stand()
        defer { stand.stop() }
        let marker = stand.bus.directory.appendingPathComponent("wpa_supplicant-was-activated")
        try WPASupplicantMock.makeActivatable(on: stand.bus, marker: marker)
        let nm = try NetworkManagerMock(bus: stand.bus)
        defer { nm.stop() }
        let wlan0 = try nm.addWiFiDevice("wlan0", interface: "wlan0")
        try nm.addAccessPoint(device: wlan0, name: "ap1", ssid: "a", hwAddress: "02:11:22:33:44:01", strength: 70)
        let connection = try await stand.connect()
        defer { Task { @BusActor in connection.close() } }
        let recorder = await BusActor.run {
            let networkManager = NetworkManagerScanner(
                connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                settleDelay: .milliseconds(200))
            let wpaSupplicant = WPASupplicantScanner(
                connection: connection, clock: SystemClock(), timers: EventLoop.main, logger: stand.logger,
                roundTimeout: Stand.roundTimeout)
            return ScanRecorder(
                WiFiScanner(wpaSupplicant: wpaSupplicant, networkManager: networkManager, logger: stand.logger))
        }
        let scanner = await recorder.scanner
        await scanner.ready()
        #expect(await scanner.backend == "NetworkManager")
        await scanner.start(interval: .milliseconds(300))
        _ = try await recorder.scan(2)
        await scanner.stop()
        // The bus starts an activated service at once; give a started script time to run all the same.
        try await Task.sleep(for: .milliseconds(300))
        #expect(!FileManager.default.fileExists(atPath: marker.path), "the scanner started wpa_supplicant")
        #expect(await !scanner.wpaSupplicant.isServiceRunning)

        // The activation file works: a call by name does start the stand-in.
        _ = try Unprivileged.run(
            [
                try Executables.find("busctl").path, "--address=\(stand.bus.address)", "--timeout=2", "call",
                WPASupplicantMock.busName, "/", "org.freedesktop.DBus.Peer", "Ping",
            ],
            asUser: nil, environment: stand.bus.environment, in: stand.bus.directory)
        try Wait.until("the activation script to run", timeout: 10) {
            FileManager.default.fileExists(atPath: marker.path)
        }
    }
}

/// Whole seconds since boot on `CLOCK_BOOTTIME`.
func bootSeconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_BOOTTIME, &now)
    return Int64(now.tv_sec)
}
