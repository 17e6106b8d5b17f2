import Foundation
import Glibc
import TestBasics
import TestSupport

/// The daemon's memory by kind of mapping, from /proc/PID/smaps, in KiB.
struct MappedMemory: Sendable {
    var rss = 0
    var privateKiB = 0
    /// The main arena (`[heap]`): resident, and its private dirty pages.
    var heapRSS = 0
    /// Anonymous mappings without a name (the other threads' malloc arenas, large allocations, Swift's task
    /// allocator slabs), resident.
    var anonymousRSS = 0
    /// The main thread's stack (`[stack]`; the other threads' stacks are anonymous mappings).
    var stackRSS = 0
    /// File-backed mappings (the executable and the libraries), resident and private.
    var fileRSS = 0
    var filePrivate = 0

    /// Reads `pid`'s smaps.
    static func read(_ pid: pid_t) -> MappedMemory {
        var memory = MappedMemory()
        var name = ""
        for line in lines(of: "/proc/\(pid)/smaps") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.contains("-") && !first.hasSuffix(":") {
                name = fields.count > 5 ? fields[5...].joined(separator: " ") : ""
                continue
            }
            guard fields.count >= 2, let value = Int(fields[1]) else { continue }
            switch first {
            case "Rss:":
                memory.rss += value
                if name == "[heap]" {
                    memory.heapRSS += value
                } else if name == "[stack]" {
                    memory.stackRSS += value
                } else if name.hasPrefix("/") {
                    memory.fileRSS += value
                } else if name.isEmpty {
                    memory.anonymousRSS += value
                }
            case "Private_Clean:", "Private_Dirty:":
                memory.privateKiB += value
                if name.hasPrefix("/") { memory.filePrivate += value }
            default: break
            }
        }
        return memory
    }

    /// The lines of a file read to its end with stdio: /proc's files tell no size, and smaps is long.
    private static func lines(of path: String) -> [Substring] {
        guard let file = fopen(path, "r") else { return [] }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n")
    }
}

/// `wbload --memory-steps N,N,…`: whereaboutsd as installed, alone, idle as started, then with one started client
/// kept throughout (as in ``measure(_:on:_:)``), then with clients added in rounds, each on a connection of its own,
/// up to each count in turn; at each step, after the daemon settled, its memory by kind of mapping
/// (``MappedMemory``). The slope between
/// steps is what a client costs, and where: the main arena, the other anonymous mappings, the files' pages.
/// With `--hold SECONDS`, it waits that long after each step's reading, the clients still active, so that the
/// daemon's heap can be looked at from outside (its process id is printed).
func measureMemorySteps(on bench: BenchBus, _ options: Options) async throws -> String {
    let contender = try await makeContender(.whereabouts, on: bench.bus)
    defer { contender.shutdown() }
    let watch = try await NameWatch(address: bench.bus.address)
    try contender.launch()
    _ = try await watch.waitUntilOwned(timeout: .seconds(120))
    let pid = try contender.pid
    let load = try LoadFleet(
        address: bench.bus.address, user: BenchBus.loadUser, processes: options.loadProcesses, pooledConnections: 1)
    defer { load.quit() }
    try await load.registerAgent(as: GeoClueHarness.agentId)
    await pause(seconds: options.settleSeconds)
    let idle = MappedMemory.read(pid)
    log("memory steps: idle: \(idle)")
    _ = try await load.startKeeper(of: "whereaboutsd", timeout: options.stepTimeout)
    let loadBefore = Machine.loadAverage()
    func hold(at step: Int) async {
        guard options.holdSeconds > 0 else { return }
        log("memory steps: holding \(options.holdSeconds) s at \(step), whereaboutsd is pid \(pid)")
        await pause(seconds: Double(options.holdSeconds))
    }
    var rows: [(clients: Int, memory: MappedMemory)] = []
    var active = 0
    await pause(seconds: options.settleSeconds)
    rows.append((0, MappedMemory.read(pid)))
    log("memory steps: the kept client alone: \(rows[0].memory)")
    await hold(at: 0)
    for step in options.memorySteps {
        let round = try await load.round(
            step - active, .own, desktopId: Contender.desktopId, timeout: options.stepTimeout)
        if round.unserved > 0 { log("memory steps: \(round.unserved) unserved: \(round.refusal ?? "")") }
        active = step
        await pause(seconds: options.settleSeconds)
        rows.append((step, MappedMemory.read(pid)))
        log("memory steps: \(step) clients besides the kept one: \(rows.last!.memory)")
        await hold(at: step)
    }
    var table = "whereaboutsd as installed, one started client kept, then clients each on a connection of its own\n"
    table += "load average before: \(loadBefore), after: \(Machine.loadAverage())\n"
    table += "| clients besides the kept one | RSS KiB | private KiB | [heap] KiB | other anonymous KiB |"
    table += " files RSS / private KiB | stack KiB | per client since 0: RSS / private / heap / anonymous, bytes |\n"
    table += "|---|---|---|---|---|---|---|---|\n"
    table +=
        "| none (idle, as started) | \(idle.rss) | \(idle.privateKiB) | \(idle.heapRSS) | \(idle.anonymousRSS) |"
        + " \(idle.fileRSS) / \(idle.filePrivate) | \(idle.stackRSS) | |\n"
    let base = rows[0].memory
    for (clients, memory) in rows {
        func perClient(_ value: Int, _ start: Int) -> String {
            clients == 0 ? "" : String(format: "%.0f", Double(value - start) * 1024 / Double(clients))
        }
        let slopes = [
            perClient(memory.rss, base.rss), perClient(memory.privateKiB, base.privateKiB),
            perClient(memory.heapRSS, base.heapRSS), perClient(memory.anonymousRSS, base.anonymousRSS),
        ]
        table +=
            "| \(clients) | \(memory.rss) | \(memory.privateKiB) | \(memory.heapRSS) | \(memory.anonymousRSS) |"
            + " \(memory.fileRSS) / \(memory.filePrivate) | \(memory.stackRSS) |"
            + " \(clients == 0 ? "" : slopes.joined(separator: " / ")) |\n"
    }
    return table
}
