import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

/// A pseudo-terminal whose slave side the daemon reads as an NMEA device.
final class PseudoTerminal: @unchecked Sendable {
    let master: Int32
    let slavePath: String

    init() throws {
        // /dev/ptmx, then unlock the slave (TIOCSPTLCK) and ask its number (TIOCGPTN).
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard master >= 0, ioctl(master, 0x4004_5431, &unlock) == 0, ioctl(master, 0x8004_5430, &number) == 0 else {
            throw TestEnvironmentError("cannot make a pty: errno \(errno)")
        }
        slavePath = "/dev/pts/\(number)"
        // Keep the line open even while the daemon has not opened the slave yet.
        var settings = termios()
        tcgetattr(master, &settings)
        cfmakeraw(&settings)
        tcsetattr(master, TCSANOW, &settings)
    }

    func write(_ text: String) {
        var bytes = Array(text.utf8)
        _ = Glibc.write(master, &bytes, bytes.count)
    }

    func write(_ bytes: [UInt8]) {
        var copy = bytes
        _ = Glibc.write(master, &copy, copy.count)
    }

    deinit { close(master) }
}

/// A Unix stream socket server that hands each connecting client what the test writes.
final class NMEASocketServer: @unchecked Sendable {
    let path: String
    private let listener: Int32
    private var client: Int32 = -1

    init(path: String) throws {
        self.path = path
        listener = try listeningUnixSocket(at: path)
    }

    /// Waits for the daemon to connect.
    func accept(timeout: Double = 10) throws {
        var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else {
            throw TestEnvironmentError("nobody connected to \(path)")
        }
        client = Glibc.accept(listener, nil, nil)
    }

    func write(_ bytes: [UInt8]) {
        var copy = bytes
        _ = send(client, &copy, copy.count, Int32(MSG_NOSIGNAL))
    }

    func dropClient() {
        if client >= 0 { close(client) }
        client = -1
    }

    deinit {
        dropClient()
        close(listener)
    }
}

@Suite("NMEA streams, end to end")
@BusActor
struct NMEAStreamTests {
    /// Garbage the parser must survive: binary, NULs, a line far over the limit, bad checksums, truncation.
    static let garbage: [UInt8] =
        [0, 0xff, 0xfe, 0x24, 0x0d, 0x0a] + Array("$GPGGA,123519,4807.038,N*00\r\n".utf8)
        + Array(repeating: UInt8(ascii: "A"), count: 100_000) + Array("\r\n$GPRMC,12".utf8) + [0x0d, 0x0a]

    private func startedClient(_ harness: DaemonHarness) async throws -> GeoClueTestClient {
        let app = try await GeoClueTestClient(bus: harness.bus)
        _ = try await app.startedClient()
        return app
    }

    private func longitudes(_ app: GeoClueTestClient) async throws -> [Double] {
        var values: [Double] = []
        for update in app.locationUpdates {
            if let longitude = try? await app.get(update.new, GeoClueTestClient.locationInterface, "Longitude").double {
                values.append(longitude)
            }
        }
        return values
    }

    @Test func aPtyDeviceFeedsFixesAndSurvivesGarbage() async throws {
        let pty = try PseudoTerminal()
        let harness = try DaemonHarness(config: "[network-nmea]\nenable=true\ndevice=\(pty.slavePath)\nbaud=9600\n")
        defer { harness.stop() }
        try harness.startDaemon()
        let app = try await startedClient(harness)
        defer { app.close() }
        let track = nmeaTrack(count: 6).components(separatedBy: "\r\n").filter { !$0.isEmpty }
        pty.write(Self.garbage)
        for pair in stride(from: 0, to: track.count, by: 2) {
            pty.write(track[pair] + "\r\n" + track[pair + 1] + "\r\n")
            try await Task.sleep(for: .milliseconds(50))
        }
        // One update per epoch: six epochs, six updates, however the sentences were split.
        let updates = try await app.waitForUpdates(6)
        _ = try await app.get(GeoClueTestClient.managerPath, GeoClueTestClient.managerInterface, "InUse")
        #expect(app.locationUpdates.count == 6)
        // Only the newest Location objects stay; they move east.
        let values = try await longitudes(app)
        #expect(values.count >= 2 && values.count <= 4)
        #expect(values == values.sorted())
        let first = try await app.getAll(updates[5].new, GeoClueTestClient.locationInterface)
        #expect(first["Latitude"] == .double(48))
        #expect((first["Accuracy"]?.double ?? 0) > 0)
        #expect(abs((first["Speed"]?.double ?? 0) - 10) < 0.1)
        #expect(harness.daemonLog.contains("ignoring a bad sentence"))
        #expect(harness.daemon?.isRunning == true)
    }

    @Test func aUnixSocketFeedsFixesAndIsReopenedAfterItCloses() async throws {
        let directory = try TemporaryDirectory.make(prefix: "whereabouts-nmea")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try NMEASocketServer(path: directory.appendingPathComponent("nmea.sock").path)
        let harness = try DaemonHarness(config: "[network-nmea]\nenable=true\nnmea-socket=\(server.path)\n")
        defer { harness.stop() }
        try harness.startDaemon()
        let app = try await startedClient(harness)
        defer { app.close() }
        try server.accept()
        let track = nmeaTrack(count: 8)
        let lines = track.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        server.write(Self.garbage)
        // Split the stream at awkward places: sentences arrive in pieces.
        let bytes = Array(lines[0..<8].joined(separator: "\r\n").utf8) + [0x0d, 0x0a]
        for chunk in stride(from: 0, to: bytes.count, by: 7) {
            server.write(Array(bytes[chunk..<min(bytes.count, chunk + 7)]))
        }
        _ = try await app.waitForUpdates(3)
        server.dropClient()
        try server.accept()
        server.write(Array((lines[8..<16].joined(separator: "\r\n") + "\r\n").utf8))
        try await app.waitFor("fixes after the socket was reopened") { app.locationUpdates.count >= 6 }
        // The end of the stream took the only provider's availability away, and the reopened stream gave it back:
        // the Manager announced both, and the client heard both.
        try await app.waitFor("AvailableAccuracyLevel 0 and 8 announced") { app.announcedAvailableLevels.count >= 2 }
        #expect(app.announcedAvailableLevels == [0, 8])
        #expect(app.availabilityChanges.map(\.available) == [false, true], "\(app.availabilityChanges)")
    }

    @Test func aCityLevelClientDoesNotOpenTheStream() async throws {
        let pty = try PseudoTerminal()
        let harness = try DaemonHarness(config: "[network-nmea]\nenable=true\ndevice=\(pty.slavePath)\n")
        defer { harness.stop() }
        try harness.startDaemon()
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        _ = try await app.startedClient(level: 4)
        // The providers a client needs are started before the service reads its next call, and the stream is
        // opened only by a started provider.
        #expect(try await app.providerRow("nmea").running == false, "a city-level client started the NMEA stream")
    }
}

extension NMEAStreamTests {
    @Test func aWaitingRequestFailsWithLocationUnavailableWhenTheStreamGoes() async throws {
        let directory = try TemporaryDirectory.make(prefix: "whereabouts-nmea")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try NMEASocketServer(path: directory.appendingPathComponent("nmea.sock").path)
        let harness = try DaemonHarness(config: "[network-nmea]\nenable=true\nnmea-socket=\(server.path)\n")
        defer { harness.stop() }
        try harness.startDaemon()
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let client = try await app.getClient()
        try await app.set(client, GeoClueTestClient.clientInterface, "DesktopId", .string("whereabouts-test"))
        try await app.set(client, GeoClueTestClient.clientInterface, "RequestedAccuracyLevel", .uint32(8))
        let request = Task { @BusActor in
            try await app.call(
                client, "io.github.whereabouts1.Client", "RequestLocation", [.vardict(["timeout": .uint32(120_000)])])
        }
        // Accepting blocks: off the bus thread, which must go on serving the request.
        try await Task.detached { try server.accept() }.value
        server.dropClient()
        // The error tells the stream's end from the request's timeout (Timeout, two minutes away).
        await expectDBusError("io.github.whereabouts1.Error.LocationUnavailable", containing: "went away") {
            _ = try await request.value
        }
    }
}
