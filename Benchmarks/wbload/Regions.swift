import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport

/// What one round of the regions bench measured, on a fresh daemon: the apps connected, their regions added (none
/// for the baseline), then the drive played.
struct RegionRound: Sendable {
    /// The regions the apps added.
    var regions = 0
    /// The daemon's memory with the apps connected and the monitor started, before any region.
    var connected = Memory.zero
    /// Its memory once the regions were added.
    var withRegions = Memory.zero
    /// Seconds the apps took to add their regions, all at once.
    var addSeconds = 0.0
    /// The measured stretch of the drive: its seconds, the fixes the monitor got (`LocationUpdated`), the
    /// `RegionChanged` signals the apps got, and the CPU each process used.
    var seconds = 0.0
    var fixes = 0
    var changes = 0
    var cpu = CPU()

    /// Daemon CPU per fix, microseconds.
    var servicePerFix: Double { cpu.service / Double(max(fixes, 1)) * 1e6 }
    /// dbus-daemon CPU per fix, microseconds.
    var busPerFix: Double { cpu.bus / Double(max(fixes, 1)) * 1e6 }
}

/// The regions bench's figures: the baseline round (the apps, no region), the round with the regions, and the
/// conditions they ran in.
struct RegionFigures: Sendable {
    let baseline: RegionRound
    let loaded: RegionRound
    /// Boundary crossings of the measured fixes, from the geometry alone.
    let crossings: Int
    let fixes: Int
    let commit: String
    let daemon: String
    let loadBefore: String
    let loadAfter: String

    /// Private memory per region, bytes.
    var privatePerRegion: Double {
        Double(loaded.withRegions.privateKiB - loaded.connected.privateKiB) * 1024 / Double(max(loaded.regions, 1))
    }
}

/// `wbload --regions`: what geofencing costs whereaboutsd as installed. Two rounds on fresh daemons, the same but
/// for the regions: ``RegionLayout/apps`` apps, run as the five ``BenchBus/regionUsers`` (a user may keep 2000
/// regions), two each, and authorised *always* as the other
/// rounds' app is (polkit's challenge met by `allowed=true`), each on a connection of its own, connect; one
/// started client at exact level (the monitor) counts the fixes; in the second round each app adds
/// ``RegionLayout/regionsPerApp`` regions; then a simulation (`Manager.Simulate`, called as root) plays the drive
/// at ``RegionLayout/fixesPerSecond``, and the daemon's CPU over `options.fixes` of its fixes, after a warm-up, is
/// divided by the fixes the monitor got. The baseline round has the same feed and clients, so the difference is
/// what the regions cost per fix.
func measureRegions(on bench: BenchBus, _ options: Options) async throws -> RegionFigures {
    let loadBefore = loadAverage()
    let epochs = RegionLayout.drive(count: RegionLayout.warmUpFixes + options.fixes + RegionLayout.tailFixes)
    let baseline = try await regionRound(adding: false, epochs, on: bench, options)
    let loaded = try await regionRound(adding: true, epochs, on: bench, options)
    return RegionFigures(
        baseline: baseline, loaded: loaded,
        crossings: RegionLayout.crossings(
            of: epochs, measured: RegionLayout.warmUpFixes..<(RegionLayout.warmUpFixes + options.fixes)),
        fixes: options.fixes, commit: commit(), daemon: try ProjectPaths.product("whereaboutsd").path,
        loadBefore: loadBefore, loadAfter: loadAverage())
}

private func regionRound(adding: Bool, _ epochs: [NMEAEpoch], on bench: BenchBus, _ options: Options) async throws
    -> RegionRound
{
    let label = adding ? "\(RegionLayout.apps * RegionLayout.regionsPerApp) regions" : "no regions"
    var round = RegionRound()
    let apps = (0..<RegionLayout.apps).map(RegionLayout.desktopId)
    let contender = try await makeContender(.whereabouts, on: bench.bus, apps: [Contender.desktopId] + apps)
    defer { contender.shutdown() }
    let watch = try await NameWatch(address: bench.bus.address)
    try contender.launch()
    _ = try await watch.waitUntilOwned()
    let pid = try contender.pid
    // One child per user, each running its user's apps; the first also runs the monitor.
    let children = try BenchBus.regionUsers.map { user in
        try RemoteLoad(address: bench.bus.address, user: user, pooledConnections: 1)
    }
    defer { for child in children { child.quit() } }
    let child = children[0]
    let meter = CPUMeter(service: pid, load: children.map(\.pid), bus: bench.bus.pid, polkit: bench.polkitPid)

    log("regions, \(label): \(RegionLayout.apps) apps of \(children.count) users connect")
    for (index, each) in children.enumerated() {
        let first = index * RegionLayout.appsPerUser
        _ = try await each.ask("regions connect \(first) \(RegionLayout.appsPerUser)", expecting: "ok")
    }
    // The monitor, which also keeps the receiver read from the start, so that both memory figures have it.
    let monitor = try await child.ask("round 1 own \(Contender.desktopId) 20", expecting: "round")
    guard monitor.count >= 3, monitor[1] == "0" else {
        throw TestEnvironmentError(
            "no fix reached the monitor (\(monitor.joined(separator: " "))):\n\(contender.process?.log ?? "")")
    }
    await pause(seconds: 3)
    round.connected = ProcessFigures.memory(pid)
    round.withRegions = round.connected
    if adding {
        log("regions, \(label): each app adds \(RegionLayout.regionsPerApp)")
        let additions = children.map { each in Task { try await each.ask("regions add", expecting: "ok") } }
        var seconds = 0.0
        for addition in additions {
            seconds = max(seconds, try await addition.value.first.flatMap { Double($0) } ?? .nan)
        }
        round.addSeconds = seconds
        round.regions = RegionLayout.apps * RegionLayout.regionsPerApp
        await pause(seconds: 3)
        round.withRegions = ProcessFigures.memory(pid)
    }
    log(
        "regions, \(label): private \(round.connected.privateKiB) → \(round.withRegions.privateKiB) KiB; the drive,"
            + " \(epochs.count) fixes at \(RegionLayout.fixesPerSecond)/s")

    let before = try await child.count("updates")
    let drive = try await Drive.start(address: bench.bus.address, track: RegionLayout.track(epochs))
    defer { Task { @BusActor in drive.close() } }
    let playing = Double(epochs.count) / RegionLayout.fixesPerSecond
    try await child.waitForUpdates(before + RegionLayout.warmUpFixes, drive, seconds: playing + 30)
    let start = (
        updates: try await child.count("updates"), cpu: meter.read(), changes: try await changes(children),
        time: monotonicNanoseconds()
    )
    try await child.waitForUpdates(start.updates + options.fixes, drive, seconds: playing + 30)
    round.fixes = try await child.count("updates") - start.updates
    round.cpu = meter.since(start.cpu)
    round.seconds = Double(monotonicNanoseconds() - start.time) / 1e9
    round.changes = try await changes(children) - start.changes
    log(
        "regions, \(label): \(round.fixes) fixes in \(round.seconds) s, daemon CPU \(round.cpu.service) s,"
            + " \(round.changes) RegionChanged")
    await stopService(contender)
    return round
}

/// The `RegionChanged` signals the apps of all `children` heard so far.
private func changes(_ children: [RemoteLoad]) async throws -> Int {
    var total = 0
    for child in children { total += try await child.count("regions changes") }
    return total
}

extension RemoteLoad {
    /// Sends `command` and returns the words of its answer after `expected`, off the bus thread.
    @concurrent func ask(_ command: String, expecting expected: String) async throws -> [Substring] {
        send(command)
        return try answer(expecting: expected)
    }

    /// The number the child answers `command` with (`updates`: the monitor's fixes; `regions changes`: the
    /// apps' `RegionChanged`).
    func count(_ command: String) async throws -> Int {
        let expected = String(command.split(separator: " ").last ?? "")
        guard let count = try await ask(command, expecting: expected).first.flatMap({ Int($0) }) else {
            throw TestEnvironmentError("the answer to \(command) was not a number")
        }
        return count
    }

    /// Waits until the monitor has had `updates` fixes in all, or the drive has ended; throws after `seconds`.
    func waitForUpdates(_ updates: Int, _ drive: Drive, seconds: Double) async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while try await count("updates") < updates {
            if await drive.ended { return }
            guard ContinuousClock.now < deadline else {
                throw TestEnvironmentError("the monitor got fewer than \(updates) fixes in \(Int(seconds)) s")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// The drive, played by `io.github.whereabouts1.Manager.Simulate` from a connection of root's, which the
/// simulation lasts as long as.
@BusActor
final class Drive {
    private let connection: Connection
    /// Whether `SimulationEnded` came.
    private(set) var ended = false

    private init(connection: Connection) { self.connection = connection }

    /// Plays `track` (NMEA) once at ``RegionLayout/fixesPerSecond``.
    static func start(address: String, track: String) async throws -> Drive {
        let drive = Drive(connection: try Connection.open(address: address))
        _ = try await drive.connection.subscribe(
            SignalMatch(interface: RegionLayout.managerInterface, member: "SimulationEnded")
        ) { [weak drive] _ in drive?.ended = true }
        _ = try await drive.connection.call(
            destination: GeoClueTestClient.service, path: GeoClueTestClient.managerPath,
            interface: RegionLayout.managerInterface, member: "Simulate",
            arguments: [
                .string(track),
                .vardict([
                    "speed": .double(RegionLayout.fixesPerSecond), "loop": .boolean(false),
                    "name": .string("regions-drive.nmea"),
                ]),
            ],
            timeout: .seconds(60))
        return drive
    }

    /// Ends the simulation.
    func close() { connection.close() }
}

/// /proc/loadavg's three averages.
private func loadAverage() -> String {
    let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
    return text.split(separator: " ").prefix(3).joined(separator: " ")
}

/// The commit the bench was built from (`git describe --always --dirty`), or "unknown".
private func commit() -> String {
    let git = Process()
    let output = Pipe()
    git.executableURL = URL(fileURLWithPath: "/usr/bin/git")
    git.arguments = ["-C", ProjectPaths.root.path, "describe", "--always", "--dirty"]
    git.standardOutput = output
    git.standardError = FileHandle.nullDevice
    guard (try? git.run()) != nil else { return "unknown" }
    git.waitUntilExit()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    return git.terminationStatus == 0 ? text.trimmingCharacters(in: .whitespacesAndNewlines) : "unknown"
}

/// The regions bench's table, for the README.
func regionTable(_ figures: RegionFigures) -> String {
    var system = utsname()
    uname(&system)
    let machine = withUnsafeBytes(of: &system.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    let (base, loaded) = (figures.baseline, figures.loaded)
    let regions = loaded.regions.formatted()
    func micro(_ value: Double) -> String { String(format: "%.1f µs", value) }
    func mebi(_ kib: Int) -> String { String(format: "%.2f MiB", Double(kib) / 1024) }
    func fixes(_ round: RegionRound) -> String { "\(round.fixes) of \(figures.fixes)" }
    let rows: [[String]] = [
        ["", "no regions", "\(regions) regions", "difference"],
        [
            "whereaboutsd CPU per fix", micro(base.servicePerFix), micro(loaded.servicePerFix),
            String(format: "%+.1f µs", loaded.servicePerFix - base.servicePerFix),
        ],
        [
            "dbus-daemon CPU per fix", micro(base.busPerFix), micro(loaded.busPerFix),
            String(format: "%+.1f µs", loaded.busPerFix - base.busPerFix),
        ],
        ["fixes taken (the monitor's LocationUpdated)", fixes(base), fixes(loaded), ""],
        [
            "measured stretch", String(format: "%.1f s", base.seconds), String(format: "%.1f s", loaded.seconds), "",
        ],
        [
            "RegionChanged heard by the apps", String(base.changes), String(loaded.changes),
            "(\(figures.crossings) boundary crossings on the track)",
        ],
        ["private memory, apps connected", mebi(base.connected.privateKiB), mebi(loaded.connected.privateKiB), ""],
        [
            "private memory, regions added", "–", mebi(loaded.withRegions.privateKiB),
            String(
                format: "%+.2f MiB, %.0f bytes per region",
                Double(loaded.withRegions.privateKiB - loaded.connected.privateKiB) / 1024, figures.privatePerRegion),
        ],
        ["AddRegion × \(regions), the apps at once", "–", String(format: "%.1f s", loaded.addSeconds), ""],
    ]
    let widths = (0..<4).map { column in rows.map { $0[column].count }.max() ?? 0 }
    let table = rows.map { row in
        row.enumerated().map { column, cell in cell.padding(toLength: widths[column], withPad: " ", startingAt: 0) }
            .joined(separator: "  ").replacing(/\s+$/, with: "")
    }
    let header = [
        "wbload --regions \(ISO8601DateFormatter().string(from: Date())): whereaboutsd \(figures.commit) as packaged"
            + " (\(figures.daemon)), one bus with polkitd and the package's policy;"
            + " \(ProcessInfo.processInfo.activeProcessorCount) cores \(machine), load average"
            + " \(figures.loadBefore) at the start, \(figures.loadAfter) at the end (other work may be running)",
        "\(RegionLayout.apps) apps (\(RegionLayout.desktopId(0))…\(RegionLayout.apps - 1)), \(RegionLayout.appsPerUser)"
            + " each as \(BenchBus.regionUsers.joined(separator: ", ")),"
            + " each on a connection of its own, authorised always (polkit's challenge met by allowed=true),"
            + " \(RegionLayout.regionsPerApp) regions each: circles of"
            + " \(Int(RegionLayout.radii.lowerBound))–\(Int(RegionLayout.radii.upperBound)) m radius within"
            + " \(Int(RegionLayout.spread / 1000)) km of \(RegionLayout.centre.latitude) N"
            + " \(RegionLayout.centre.longitude) E (SplitMix64, seeded with the app's number)",
        "fixes: a drive across the area (Manager.Simulate of an NMEA track, \(Int(RegionLayout.fixesPerSecond))"
            + " fixes/s), \(figures.fixes) measured after \(RegionLayout.warmUpFixes); one started client at exact"
            + " level counts them; both rounds on a fresh daemon with the same feed and clients",
    ]
    return
        (header + [""] + table + ["", "GeoClue 2.6 has no geofencing: there is nothing to set beside these figures."])
        .joined(separator: "\n") + "\n"
}
