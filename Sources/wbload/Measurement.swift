import Foundation
import Glibc
import Loop
import TestSupport

/// How much load, and for how long.
struct Options: Sendable {
    var soakSeconds = 600
    var startupRuns = 10
    var clients = 1000
    var churn = 10_000
    var connections = 50
    var output = "build/bench"
    var gpsdReport: String?
    var services = ServiceKind.allCases

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let text = rest.popFirst() else { usage() }
            switch flag {
            case "--soak-seconds": options.soakSeconds = number(text)
            case "--startup-runs": options.startupRuns = number(text)
            case "--clients": options.clients = number(text)
            case "--churn": options.churn = number(text)
            case "--connections": options.connections = number(text)
            case "--output": options.output = text
            case "--gpsd-report": options.gpsdReport = text
            case "--only":
                guard let kind = ServiceKind.allCases.first(where: { $0.key == text }) else { usage() }
                options.services = [kind]
            default: usage()
            }
        }
        return options
    }

    private static func number(_ text: String) -> Int {
        guard let value = Int(text), value > 0 else { usage() }
        return value
    }

    static func usage() -> Never {
        print(
            "usage: wbload [--soak-seconds N (600)] [--startup-runs N (10)] [--clients N (1000)] [--churn N (10000)]"
                + " [--connections N (50)] [--output DIR (build/bench)] [--gpsd-report WBBENCH-OUTPUT]"
                + " [--only whereabouts|geoclue]")
        exit(2)
    }
}

/// What one service measured.
struct Figures: Sendable {
    var startup: [Double] = []
    var idle = Memory.zero
    var firstLocation: [Int: Sample] = [:]
    /// Service and load CPU seconds while the largest group of clients started and got their first fix.
    var burstCPU = (service: 0.0, load: 0.0, bus: 0.0)
    var withClients = Memory.zero
    var soakSeconds = 0.0
    var soakStart = Memory.zero
    var soakEnd = Memory.zero
    var soakSamples: [(seconds: Double, memory: Memory)] = []
    var soakUpdates = 0
    var soakEpochs = 0
    var soakCPU = (service: 0.0, load: 0.0, bus: 0.0)
    var beforeChurn = Memory.zero
    var afterChurn = Memory.zero

    /// Service CPU per delivered `LocationUpdated`, microseconds.
    var cpuPerUpdate: Double { soakCPU.service / Double(max(soakUpdates, 1)) * 1e6 }
    /// Service CPU per fix per client (one epoch to one client), microseconds.
    func cpuPerClientFix(clients: Int) -> Double { soakCPU.service / Double(max(soakEpochs * clients, 1)) * 1e6 }
    /// RSS growth during the soak per delivered update, bytes.
    var growthPerUpdate: Double { Double(soakEnd.rss - soakStart.rss) * 1024 / Double(max(soakUpdates, 1)) }
    /// Private-memory growth during the soak per delivered update, bytes.
    var privateGrowthPerUpdate: Double {
        Double(soakEnd.privateKiB - soakStart.privateKiB) * 1024 / Double(max(soakUpdates, 1))
    }
}

/// Sleeps without holding the bus thread.
@concurrent func pause(seconds: Double) async { try? await Task.sleep(for: .milliseconds(Int(seconds * 1000))) }

/// Stops a service off the bus thread (the wait blocks).
@concurrent func stopService(_ contender: Contender) async { contender.stopService() }

/// Starts a contender off the bus thread (starting the bus blocks).
@concurrent func makeContender(_ kind: ServiceKind) async throws -> Contender { try Contender(kind) }

func log(_ text: String) {
    FileHandle.standardError.write(Data("wbload: \(text)\n".utf8))
}

/// Runs every measurement against one service.
func measure(_ kind: ServiceKind, _ options: Options) async throws -> Figures {
    var figures = Figures()
    let contender = try await makeContender(kind)
    defer { contender.shutdown() }
    let watch = try await NameWatch(address: contender.bus.address)

    log("\(kind.rawValue): startup, \(options.startupRuns) runs")
    for run in 0..<options.startupRuns {
        await watch.reset()
        try contender.launch()
        let owned = try await watch.waitUntilOwned()
        guard let exec = contender.execTime else { throw TestEnvironmentError("no exec time noted") }
        figures.startup.append((owned - exec) * 1000)
        if run < options.startupRuns - 1 {
            await stopService(contender)
            try await watch.waitUntilReleased()
        }
    }
    let pid = try contender.pid
    let busPid = contender.busPid ?? pid

    let agent = try await GeoClueTestAgent.registered(on: contender.bus, as: GeoClueHarness.agentId)
    await pause(seconds: 2)
    figures.idle = ProcessFigures.memory(pid)
    log("\(kind.rawValue): idle RSS \(figures.idle.rss) KiB, private \(figures.idle.privateKiB) KiB")

    let pool = try await LoadPool(address: contender.bus.address, connections: options.connections)
    // One client keeps the receiver read, as a desktop with any location user does.
    let keeper = try await pool.startClients(1, desktopId: Contender.desktopId)
    guard await pool.timesToFirstUpdate(keeper, timeout: .seconds(20)).count == 1 else {
        throw TestEnvironmentError("no fix reached the first client of \(kind.rawValue):\n\(contender.process?.log ?? "")")
    }

    let rounds = [1: 20, 100: 3, options.clients: 1]
    var active: [LoadClient] = []
    for size in rounds.keys.sorted() {
        var times: [Double] = []
        for _ in 0..<rounds[size]! {
            let cpu = (ProcessFigures.cpuSeconds(pid), ProcessFigures.ownCPUSeconds(), ProcessFigures.cpuSeconds(busPid))
            let clients = try await pool.startClients(size, desktopId: Contender.desktopId)
            let round = await pool.timesToFirstUpdate(clients, timeout: .seconds(60))
            if round.count < size { log("\(kind.rawValue): \(size - round.count) of \(size) clients got no fix in 60 s") }
            times += round
            if size == options.clients {
                figures.burstCPU = (
                    ProcessFigures.cpuSeconds(pid) - cpu.0, ProcessFigures.ownCPUSeconds() - cpu.1,
                    ProcessFigures.cpuSeconds(busPid) - cpu.2
                )
                active = clients
            } else {
                try await pool.delete(clients)
                await pause(seconds: 0.2)
            }
        }
        figures.firstLocation[size] = Sample(times)
        log("\(kind.rawValue): first location, \(size) concurrent: p50 \(Sample(times).median) ms, p99 \(Sample(times).percentile(99)) ms")
    }

    await pause(seconds: 3)
    figures.withClients = ProcessFigures.memory(pid)
    log("\(kind.rawValue): \(active.count + 1) clients: RSS \(figures.withClients.rss) KiB, private \(figures.withClients.privateKiB) KiB")

    log("\(kind.rawValue): soak, \(options.soakSeconds) s at 1 fix/s with \(active.count + 1) clients")
    let start = (
        cpu: ProcessFigures.cpuSeconds(pid), load: ProcessFigures.ownCPUSeconds(), bus: ProcessFigures.cpuSeconds(busPid),
        updates: await pool.updates, epochs: contender.feeder.epochTimes.count, time: monotonicNanoseconds()
    )
    figures.soakStart = ProcessFigures.memory(pid)
    var elapsed = 0.0
    while elapsed < Double(options.soakSeconds) {
        await pause(seconds: min(10, Double(options.soakSeconds) - elapsed))
        elapsed = Double(monotonicNanoseconds() - start.time) / 1e9
        figures.soakSamples.append((elapsed, ProcessFigures.memory(pid)))
    }
    figures.soakEnd = ProcessFigures.memory(pid)
    figures.soakSeconds = elapsed
    figures.soakUpdates = await pool.updates - start.updates
    figures.soakEpochs = contender.feeder.epochTimes.count - start.epochs
    figures.soakCPU = (
        ProcessFigures.cpuSeconds(pid) - start.cpu, ProcessFigures.ownCPUSeconds() - start.load,
        ProcessFigures.cpuSeconds(busPid) - start.bus
    )
    log("\(kind.rawValue): soak: \(figures.soakUpdates) updates, service CPU \(figures.soakCPU.service) s, RSS \(figures.soakStart.rss) → \(figures.soakEnd.rss) KiB")

    try await pool.delete(active)
    // Warm up the allocator with a first round of clients, then take the baseline.
    let batch = 500
    func churn(_ count: Int) async throws {
        var remaining = count
        while remaining > 0 {
            let clients = try await pool.startClients(min(batch, remaining), desktopId: Contender.desktopId)
            try await pool.delete(clients)
            remaining -= clients.count
        }
    }
    try await churn(min(options.churn, 1000))
    await pause(seconds: 3)
    figures.beforeChurn = ProcessFigures.memory(pid)
    log("\(kind.rawValue): \(options.churn) clients created and removed")
    try await churn(options.churn)
    await pause(seconds: 3)
    figures.afterChurn = ProcessFigures.memory(pid)
    log("\(kind.rawValue): churn: RSS \(figures.beforeChurn.rss) → \(figures.afterChurn.rss) KiB")

    await pool.close()
    await agent.close()
    await stopService(contender)
    return figures
}
