import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

/// The text of `/proc/PID/maps` (procfs files have no size, so it is read to its end rather than by its length).
private func mappings(of pid: pid_t) throws -> String {
    let maps = try #require(FileHandle(forReadingAtPath: "/proc/\(pid)/maps"))
    defer { try? maps.close() }
    return String(decoding: try maps.readToEnd() ?? Data(), as: UTF8.self)
}

/// Runs `program` and returns its exit status and merged output.
private func run(_ program: URL, _ arguments: [String]) throws -> (status: Int32, output: String) {
    let log = FileManager.default.temporaryDirectory.appendingPathComponent("whereabouts-lazy-\(UUID().uuidString).log")
    defer { try? FileManager.default.removeItem(at: log) }
    let process = try ChildProcess(program, arguments, logFile: log)
    let status = try process.wait(timeout: 60)
    return ((status >> 8) & 0xff, process.log)
}

/// The libraries the daemon loads with dlopen at their first need: libgps at the first connection to gpsd, libcurl
/// at the first lookup, libpolkit-gobject-1 with GLib, GObject and GIO at the first polkit check.
@Suite("Libraries loaded at their first need", .serialized)
@BusActor
struct LazyLibraryTests {
    nonisolated static let app = "org.example.Navigator"

    /// The libraries, as the daemon's maps name them: each is absent until its need.
    nonisolated static let gps = "/libgps.so"
    nonisolated static let curl = "/libcurl.so"
    nonisolated static let polkit = [
        "/libpolkit-gobject-1.so", "/libglib-2.0.so", "/libgobject-2.0.so", "/libgio-2.0.so",
    ]

    @Test nonisolated func theShimLoadsTheLibgpsItsHeaderBelongsTo() throws {
        // gps_library.h's file name against the SONAME of the libgps.so the build linked its header with.
        let libdir = try run(try Executables.find("pkg-config"), ["--variable=libdir", "libgps"])
        #expect(libdir.status == 0, "pkg-config found no libgps: \(libdir.output)")
        let library = libdir.output.trimmingCharacters(in: .whitespacesAndNewlines) + "/libgps.so"
        let dynamic = try run(try Executables.find("readelf"), ["-d", library])
        let soname = dynamic.output.split(separator: "\n").first { $0.contains("(SONAME)") }
            .flatMap { $0.split(separator: "[").last?.split(separator: "]").first }.map(String.init)

        let scratch = try TemporaryDirectory.make(prefix: "whereabouts-gps-name")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let source = scratch.appendingPathComponent("name.c")
        try "#include \"gps_library.h\"\n#include <stdio.h>\nint main(void) { puts(WB_GPS_LIBRARY); return 0; }\n"
            .write(to: source, atomically: true, encoding: .utf8)
        let program = scratch.appendingPathComponent("name")
        let include = ProjectPaths.root.appendingPathComponent("Sources/CGPSD").path
        let compiled = try run(
            try Executables.find("clang"), ["-Werror", "-I", include, source.path, "-o", program.path])
        try #require(compiled.status == 0, "gps_library.h does not compile against <gps.h>:\n\(compiled.output)")
        let named = try run(program, []).output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(soname != nil, "no SONAME in \(library): \(dynamic.output)")
        #expect(named == soname, "gps_library.h names \(named), the build's libgps is \(soname ?? "?")")
    }

    @Test func eachLibraryIsMappedOnlyOnceItsFirstNeedCame() async throws {
        let bus = try PolkitHarness.makeBus()
        let polkit = try PolkitHarness(bus: bus)
        defer { polkit.stop() }
        let server = try IchnaeaServer(latitude: 52.5163, longitude: 13.3777, accuracy: 42)
        defer { server.stop() }
        // The shipped sources that need a library, gpsd on a port nobody listens on: connecting fails, after libgps
        // is loaded. The app is known to the configuration, so the root client is served once polkit said yes.
        let config = """
            [gpsd]
            enable=true
            host=127.0.0.1
            port=\(try LoopbackTCP.freePort())

            [ip]
            enable=true
            url=\(server.url())

            [\(Self.app)]
            allowed=true
            system=false
            users=
            """
        let harness = try DaemonHarness(config: config, polkit: true, bus: bus)
        defer { harness.stop() }
        try await start(harness)
        let daemon = try #require(harness.daemon)
        func maps() throws -> String { try mappings(of: daemon.pid) }

        let started = try maps()
        for library in [Self.gps, Self.curl] + Self.polkit {
            #expect(!started.contains(library), "\(library) was mapped at the start:\n\(started)")
        }

        // polkit's first check, and nothing else.
        let checked = try await asNobody(polkit, ["authorise", "--check"])
        #expect(checked.output.contains("restricted"), "\(checked.output)\n\(harness.daemonLog)")
        let afterCheck = try maps()
        for library in Self.polkit { #expect(afterCheck.contains(library), "\(library) not mapped after a check") }
        #expect(!afterCheck.contains(Self.gps) && !afterCheck.contains(Self.curl), "\(afterCheck)")

        // A city-level client: IP positioning's lookup, not gpsd.
        let app = try await GeoClueTestClient(bus: bus)
        defer { app.close() }
        _ = try await app.startedClient(desktopId: Self.app, level: 4)
        _ = try await app.waitForUpdates(1, timeout: .seconds(20))
        let afterLookup = try maps()
        #expect(afterLookup.contains(Self.curl), "libcurl not mapped after the lookup:\n\(harness.daemonLog)")
        #expect(!afterLookup.contains(Self.gps), "libgps was mapped for a city-level client")

        // An exact client: the gpsd provider's first connection.
        let exact = try await GeoClueTestClient(bus: bus)
        defer { exact.close() }
        _ = try await exact.startedClient(desktopId: Self.app, level: 8)
        try await waitUntil("libgps to be mapped", timeout: .seconds(10)) { try maps().contains(Self.gps) }
        // The connection attempt ended: the gpsd provider, still running, is unavailable.
        try await exact.waitForProviderRow("gpsd", "the connection to gpsd to fail") { $0.running && !$0.available }
    }

    @Test func aLibgpsThatCannotBeLoadedLeavesGPSDUnavailableWithTheLoadersReason() async throws {
        // A file that is not a shared library, found first through LD_LIBRARY_PATH.
        let broken = try TemporaryDirectory.make(prefix: "whereabouts-broken-gps")
        defer { try? FileManager.default.removeItem(at: broken) }
        try Data("not a library".utf8).write(to: broken.appendingPathComponent("libgps.so.28"))
        let config = "[gpsd]\nenable=true\nhost=127.0.0.1\nport=\(try LoopbackTCP.freePort())\n"
        let harness = try DaemonHarness(config: config)
        defer { harness.stop() }
        try await start(harness, environment: ["LD_LIBRARY_PATH": broken.path])
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let path = try await app.startedClient(level: 8)
        try await waitUntil("the loader's reason in the log", timeout: .seconds(10)) {
            harness.daemonLog.contains("libgps.so.28") && harness.daemonLog.contains("reconnecting")
        }
        #expect(!(try mappings(of: try #require(harness.daemon).pid).contains(Self.gps)))
        let manager = GeoClueTestClient.managerInterface
        try await waitUntil("AvailableAccuracyLevel to drop to 0", timeout: .seconds(10)) {
            try await app.get(GeoClueTestClient.managerPath, manager, "AvailableAccuracyLevel") == .uint32(0)
        }
        // The daemon still serves.
        #expect(try await app.get(path, GeoClueTestClient.clientInterface, "Active") == .boolean(true))
    }

    @concurrent
    private func start(_ harness: DaemonHarness, environment: [String: String] = [:]) async throws {
        try harness.startDaemon(environment: environment)
    }

    @concurrent
    private func asNobody(_ polkit: PolkitHarness, _ arguments: [String]) async throws -> CommandResult {
        try polkit.run([try ProjectPaths.product("whereabouts").path] + arguments + ["--desktop-id", Self.app])
    }

    /// Polls `condition` every 20 ms until it holds or `timeout` passes.
    private func waitUntil(_ what: String, timeout: Duration, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while try await !condition() {
            guard ContinuousClock.now < deadline else { throw TestEnvironmentError("timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// The daemon's code pages are given back while it is idle, and its code still runs after.
@Suite("Code pages released while idle")
@BusActor
struct IdleCodeReleaseTests {
    @Test func anIdleDaemonHoldsLittleOfItsCodeAndServesTheNextClient() async throws {
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        try await startDaemon(harness)
        let daemon = try #require(harness.daemon)
        let executable = try ProjectPaths.product("whereaboutsd").resolvingSymlinksInPath().path
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        _ = try await app.startedClient(level: 8)
        _ = try await app.waitForUpdates(1)
        let serving = try residentCode(of: daemon.pid, executable: executable)
        app.close()

        // A second after the last client left; the bound leaves room for the loop's own pages.
        let deadline = ContinuousClock.now + .seconds(10)
        var idle = serving
        while idle > serving / 4 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            idle = try residentCode(of: daemon.pid, executable: executable)
        }
        #expect(idle <= serving / 4, "resident code: \(serving) KiB serving, \(idle) KiB idle")

        let next = try await GeoClueTestClient(bus: harness.bus)
        defer { next.close() }
        _ = try await next.startedClient(level: 8)
        #expect(try await next.waitForUpdates(1).count == 1)
    }

    @concurrent
    private func startDaemon(_ harness: DaemonHarness) async throws { try harness.startDaemon() }

    /// The resident KiB of the executable's `r-xp` mappings in /proc/PID/smaps.
    private nonisolated func residentCode(of pid: pid_t, executable: String) throws -> Int {
        let smaps = try #require(FileHandle(forReadingAtPath: "/proc/\(pid)/smaps"))
        defer { try? smaps.close() }
        var inCode = false
        var total = 0
        for line in String(decoding: try smaps.readToEnd() ?? Data(), as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count >= 6, fields[0].contains("-") {
                inCode = fields[1] == "r-xp" && fields[5...].joined(separator: " ") == executable
            } else if inCode, fields.first == "Rss:", fields.count >= 2, let kib = Int(fields[1]) {
                total += kib
            }
        }
        return total
    }
}
