import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport

/// What one local user can keep doing to the daemon (`Tests/Clients/attack.py`, run as ``BenchBus/loadUser``),
/// and what each does to another user: a probe, as root, opens a connection of its own and times a fresh
/// `GetClient`, every 50 ms, for ``Options/attackSeconds`` while the attack goes on. It times the bus's own `GetId`
/// on that connection first: the floor of what any service on that bus could answer, as a `GetClient` crosses the
/// bus four times (the call, the service asking the bus who the caller is, the bus's answer, the reply).
struct Attack: Sendable {
    let name: String
    /// The attack's mode and arguments; nil for the quiet baseline.
    let arguments: [String]?
    /// The apps the service's configuration allows (`allowed=true`, which meets the package's *always* challenge).
    var apps = [Contender.desktopId]

    static let all = [
        Attack(name: "none (baseline)", arguments: nil),
        Attack(name: "Introspect flood, 4,096 clients held", arguments: ["introspect", "4096"]),
        Attack(name: "RequestLocation flood, 17 connections", arguments: ["requests", "17"]),
        Attack(name: "Introspect, 128 in flight on 250 connections", arguments: ["answers", "250"]),
        Attack(name: "360 KB RequestLocations, 64 on 4 connections", arguments: ["bodies", "4"]),
        Attack(name: "4,096 clients made and dropped, repeatedly", arguments: ["churn", "4096"]),
        Attack(name: "CheckAuthorisation flood, new app each", arguments: ["checks", "10"]),
        Attack(name: "decisions stored, new app each", arguments: ["grants"]),
        Attack(name: "AddAgent flood", arguments: ["agents"]),
        Attack(
            name: "AddRegion flood, the user's 2,000 and on", arguments: ["regions"],
            apps: [Contender.desktopId] + (0..<3).map { "\(Contender.desktopId)-r\($0)" }),
    ]

    static let script = ProjectPaths.clients.appendingPathComponent("attack.py")
    static let probeInterval = Duration.milliseconds(50)
}

/// A probe's figures during one attack.
struct AttackFigures: Sendable {
    let attack: Attack
    /// Milliseconds of each answered `GetClient`.
    let latencies: Sample
    /// Milliseconds of the bus's own `GetId` on each probe's connection, just before its `GetClient`.
    let busLatencies: Sample
    /// Probes that got an error, and the first error.
    let failures: Int
    let firstFailure: String?
    /// What the service wrote to storage while probed, in bytes a second (`write_bytes` of `/proc/PID/io`).
    var writtenPerSecond: Double = .nan
    /// The service's most resident memory since it started, read as the attack ends (`VmHWM`), in KiB.
    var peakResidentKiB = 0
}

/// Runs each attack against a fresh whereaboutsd on the bench bus, as packaged, and probes it.
func measureAttacks(on bench: BenchBus, _ options: Options) async throws -> [AttackFigures] {
    var results: [AttackFigures] = []
    let chosen = Attack.all.filter { attack in
        options.attackModes.isEmpty || attack.arguments.map { options.attackModes.contains($0[0]) } ?? true
    }
    for attack in chosen {
        let contender = try await makeContender(.whereabouts, on: bench.bus, apps: attack.apps)
        defer { contender.shutdown() }
        let watch = try await NameWatch(address: bench.bus.address)
        try contender.launch()
        _ = try await watch.waitUntilOwned()
        log("attack: \(attack.name)")
        var attacker: ChildProcess?
        if let arguments = attack.arguments {
            attacker = try await startAttacker(bench, arguments)
        }
        let pid = try contender.pid
        let writtenBefore = storageBytesWritten(pid)
        var figures = try await probe(bench.bus.address, attack, seconds: options.attackSeconds)
        if let before = writtenBefore, let after = storageBytesWritten(pid) {
            figures.writtenPerSecond = Double(after - before) / Double(options.attackSeconds)
        }
        figures.peakResidentKiB = ProcessFigures.peakResidentKiB(pid)
        attacker?.stop(grace: 2)
        guard try contender.pid > 0 else { throw TestEnvironmentError("the service is gone") }
        log(
            "attack: \(attack.name): GetClient p50 \(figures.latencies.median) ms, p99 \(figures.latencies.percentile(99)) ms, max \(figures.latencies.values.last ?? .nan) ms, \(figures.failures) failed"
        )
        results.append(figures)
        await stopService(contender)
    }
    return results
}

/// Runs `attack.py` as the load user and returns it once it says the attack is under way.
@concurrent private func startAttacker(_ bench: BenchBus, _ arguments: [String]) async throws -> ChildProcess {
    let process = try bench.polkit.spawn(
        ["/usr/bin/python3", Attack.script.path, bench.bus.address, Contender.desktopId] + arguments,
        asUser: BenchBus.loadUser)
    try Wait.until("attack.py \(arguments.joined(separator: " ")) to be under way", timeout: 300) {
        guard process.isRunning else { throw TestEnvironmentError("attack.py exited:\n\(process.log)") }
        return process.log.contains("ready")
    }
    return process
}

/// The bytes process `pid` caused to be written to storage so far (`write_bytes` in `/proc/PID/io`).
private func storageBytesWritten(_ pid: pid_t) -> UInt64? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) else { return nil }
    return text.split(separator: "\n").first { $0.hasPrefix("write_bytes:") }
        .flatMap { UInt64($0.dropFirst("write_bytes:".count).trimmingCharacters(in: .whitespaces)) }
}

/// A fresh connection's `GetClient`, timed, every ``Attack/probeInterval`` for `seconds`.
@BusActor private func probe(_ address: String, _ attack: Attack, seconds: Int) async throws -> AttackFigures {
    var latencies: [Double] = []
    var busLatencies: [Double] = []
    var failures = 0
    var firstFailure: String?
    let end = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < end {
        let connection = try Connection.open(address: address)
        do {
            let asked = monotonicNanoseconds()
            _ = try await connection.call(
                destination: "org.freedesktop.DBus", path: NameOwnerFollower.busPath,
                interface: "org.freedesktop.DBus", member: "GetId", timeout: .seconds(30))
            busLatencies.append(Double(monotonicNanoseconds() - asked) / 1e6)
            let start = monotonicNanoseconds()
            _ = try await connection.call(
                destination: GeoClueTestClient.service, path: GeoClueTestClient.managerPath,
                interface: GeoClueTestClient.managerInterface, member: "GetClient", timeout: .seconds(30))
            latencies.append(Double(monotonicNanoseconds() - start) / 1e6)
        } catch {
            failures += 1
            if firstFailure == nil { firstFailure = "\(error)" }
        }
        connection.close()
        try await Task.sleep(for: Attack.probeInterval)
    }
    return AttackFigures(
        attack: attack, latencies: Sample(latencies), busLatencies: Sample(busLatencies), failures: failures,
        firstFailure: firstFailure)
}

/// The table of the attacks' figures, for the README.
func attackTable(_ results: [AttackFigures], _ options: Options) -> String {
    var lines = [
        "wbload \(ISO8601DateFormatter().string(from: Date())): a probe (root, a fresh connection each time) times "
            + "GetClient every 50 ms for \(options.attackSeconds) s while \(BenchBus.loadUser) attacks; whereaboutsd "
            + "as packaged with polkitd and the package's policy, \(ProcessInfo.processInfo.activeProcessorCount) cores; "
            + "bus p50 is the bus's own GetId on the probe's connection, the floor under a GetClient that crosses it four times",
        "",
        "attack".padding(toLength: 48, withPad: " ", startingAt: 0)
            + "probes   p50 ms   p99 ms   max ms   bus p50 ms   written KB/s   peak RSS MiB   failed",
    ]
    for result in results {
        let latencies = result.latencies
        lines.append(
            result.attack.name.padding(toLength: 48, withPad: " ", startingAt: 0)
                + String(latencies.values.count).padding(toLength: 9, withPad: " ", startingAt: 0)
                + format(latencies.median).padding(toLength: 9, withPad: " ", startingAt: 0)
                + format(latencies.percentile(99)).padding(toLength: 9, withPad: " ", startingAt: 0)
                + format(latencies.values.last ?? .nan).padding(toLength: 9, withPad: " ", startingAt: 0)
                + format(result.busLatencies.median).padding(toLength: 13, withPad: " ", startingAt: 0)
                + format(result.writtenPerSecond / 1000).padding(toLength: 15, withPad: " ", startingAt: 0)
                + format(Double(result.peakResidentKiB) / 1024).padding(toLength: 15, withPad: " ", startingAt: 0)
                + String(result.failures) + (result.firstFailure.map { " (\($0))" } ?? ""))
    }
    return lines.joined(separator: "\n") + "\n"
}

private func format(_ value: Double) -> String { value.isNaN ? "–" : String(format: "%.2f", value) }
