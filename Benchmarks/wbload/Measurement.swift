import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport

/// How much load, and for how long.
struct Options: Sendable {
    var soakSeconds = 600
    var startupRuns = 10
    var clients = 1000
    /// How many times the burst of ``clients`` runs; the figures give each run's p99 and their median and spread.
    var burstRuns = 3
    var churn = 10_000
    var connections = 50
    var loadProcesses = 10
    var output = "build/bench"
    var gpsdReport: String?
    var services = ServiceKind.allCases
    /// With `--attacks`, only the attacks run (``Attack``), each this long.
    var attacks = false
    var attackSeconds = 20
    /// With `--attack MODE` (repeatable), only the baseline and the attacks of those modes (`answers`, `bodies`, ...).
    var attackModes: [String] = []
    /// With `--regions`, only the regions bench runs (``measureRegions(on:_:)``), measuring this many fixes.
    var regions = false
    var fixes = 2000
    /// With `--floor`, only the bursts run, against the two floor services (``FloorKind``) and the services
    /// (``measureFloor(on:_:)``).
    var floor = false
    /// With `--memory-steps`, only the memory steps run (``measureMemorySteps(on:_:)``), up to these client counts;
    /// `--hold` waits that many seconds after each step, `--step-timeout` waits that long for a round's
    /// fixes (a daemon under a heap profiler is slow), `--settle` waits that long before each reading.
    var memorySteps: [Int] = []
    var holdSeconds = 0
    var stepTimeout = 60
    var settleSeconds = 3.0

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            if flag == "--regions" || flag == "--floor" {
                if flag == "--regions" { options.regions = true } else { options.floor = true }
                continue
            }
            guard let text = rest.popFirst() else { usage() }
            switch flag {
            case "--soak-seconds": options.soakSeconds = number(text)
            case "--startup-runs": options.startupRuns = number(text)
            case "--clients": options.clients = number(text)
            case "--burst-runs": options.burstRuns = number(text)
            case "--churn": options.churn = number(text)
            case "--connections": options.connections = number(text)
            case "--load-processes": options.loadProcesses = number(text)
            case "--output": options.output = text
            case "--gpsd-report": options.gpsdReport = text
            case "--fixes": options.fixes = number(text)
            case "--memory-steps": options.memorySteps = text.split(separator: ",").map { number(String($0)) }
            case "--hold": options.holdSeconds = number(text)
            case "--step-timeout": options.stepTimeout = number(text)
            case "--settle": options.settleSeconds = Double(number(text))
            case "--attacks":
                options.attacks = true
                options.attackSeconds = number(text)
            case "--attack":
                guard Attack.all.contains(where: { $0.arguments?.first == text }) else { usage() }
                options.attackModes.append(text)
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
            "usage: wbload [--soak-seconds N (600)] [--startup-runs N (10)] [--clients N (1000)] [--burst-runs N (3)]"
                + " [--churn N (10000)]"
                + " [--connections N (50), for the pooled round] [--load-processes N (10)] [--output DIR (build/bench)]"
                + " [--gpsd-report WBBENCH-OUTPUT]"
                + " [--only whereabouts|geoclue] [--attacks SECONDS [--attack MODE]…, alone: a probe's GetClient during each attack,"
                + " or the baseline's and those of MODE (introspect, requests, answers, bodies, …)]"
                + " [--regions [--fixes N (2000)], alone: CPU per fix and memory per region with 10,000 regions]"
                + " [--floor, alone: the bursts against a service that does the least any could, and the services]"
                + " [--memory-steps N,N,… [--hold SECONDS] [--step-timeout SECONDS (60)] [--settle SECONDS (3)],"
                + " alone: whereaboutsd's memory by kind of mapping as clients are added]")
        exit(2)
    }
}

/// What one service measured.
struct Figures: Sendable {
    var startup: [Double] = []
    var idle = Memory.zero
    /// Time to first location by the number of clients starting at once, each on a connection of its own.
    var firstLocation: [Int: Sample] = [:]
    /// The p99 of each run of those, by the number of clients, so that one quiet run is not taken for the figure.
    var runP99: [Int: [Double]] = [:]
    /// The same for ``Options/clients`` clients on ``Options/connections`` connections (not how apps connect).
    var pooledFirstLocation = Sample([])
    /// Service, load and dbus-daemon CPU seconds while the largest group of clients started and got their first
    /// fix, each on a connection of its own, and pooled.
    var burstCPU = CPU()
    var pooledBurstCPU = CPU()
    /// Clients refused or left without a fix in any round, and the first refusal's error.
    var unserved = 0
    var firstRefusal: String?
    var withClients = Memory.zero
    var soakSeconds = 0.0
    var soakStart = Memory.zero
    var soakEnd = Memory.zero
    var soakSamples: [(seconds: Double, memory: Memory)] = []
    var soakUpdates = 0
    var soakEpochs = 0
    var soakCPU = CPU()
    var beforeChurn = Memory.zero
    var afterChurn = Memory.zero
    /// The bus messages of a later client's life.
    var life = LifeMessages()
    /// The same while another client keeps the receiver read, so that a fix is at hand when it starts, as for
    /// the clients of a burst.
    var lifeWithFix = LifeMessages()

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

/// CPU seconds of the processes at work: the service, the load, dbus-daemon and polkitd.
struct CPU: Sendable {
    var service = 0.0
    var load = 0.0
    var bus = 0.0
    var polkit = 0.0
}

/// Reads the CPU time of the processes at work, so that a stretch of the run can be charged to each.
struct CPUMeter: Sendable {
    let service: pid_t
    let load: [pid_t]
    let bus: pid_t
    let polkit: pid_t?

    /// Their CPU seconds so far.
    func read() -> CPU {
        CPU(
            service: Machine.cpuSeconds(service), load: load.map(Machine.cpuSeconds).reduce(0, +),
            bus: Machine.cpuSeconds(bus), polkit: polkit.map(Machine.cpuSeconds) ?? 0)
    }

    /// The CPU seconds each used since `start`.
    func since(_ start: CPU) -> CPU {
        let now = read()
        return CPU(
            service: now.service - start.service, load: now.load - start.load, bus: now.bus - start.bus,
            polkit: now.polkit - start.polkit)
    }
}

/// Sleeps without holding the bus thread.
@concurrent func pause(seconds: Double) async { try? await Task.sleep(for: .milliseconds(Int(seconds * 1000))) }

/// Stops a service off the bus thread (the wait blocks).
@concurrent func stopService(_ contender: Contender) async { contender.stopService() }

/// Makes a contender off the bus thread (its receiver's socket is set up by blocking calls).
@concurrent func makeContender(_ kind: ServiceKind, on bus: PrivateBus, apps: [String] = [Contender.desktopId])
    async throws -> Contender
{
    try Contender(kind, on: bus, apps: apps)
}

func log(_ text: String) {
    FileHandle.standardError.write(Data("wbload: \(text)\n".utf8))
}

/// Runs every measurement against one service on the bench bus.
func measure(_ kind: ServiceKind, on bench: BenchBus, _ options: Options) async throws -> Figures {
    var figures = Figures()
    let contender = try await makeContender(kind, on: bench.bus)
    defer { contender.shutdown() }
    let watch = try await NameWatch(address: bench.bus.address)

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

    let load = try LoadFleet(
        address: bench.bus.address, user: BenchBus.loadUser, processes: options.loadProcesses,
        pooledConnections: options.connections)
    defer { load.quit() }
    let meter = CPUMeter(service: pid, load: load.pids, bus: bench.bus.pid, polkit: bench.polkitPid)
    try await load.registerAgent(as: GeoClueHarness.agentId)
    await pause(seconds: 2)
    figures.idle = ProcessFigures.memory(pid)
    log("\(kind.rawValue): idle RSS \(figures.idle.rss) KiB, private \(figures.idle.privateKiB) KiB")
    figures.life = try await LifeMessages.count(on: bench, app: Contender.desktopId)
    log(
        "\(kind.rawValue): a client's life, \(figures.life.total) bus messages, \(figures.life.service) from the service:"
            + " \(figures.life.serviceSequence.joined(separator: ", "))"
    )

    let keeper = try await load.startKeeper(of: kind.rawValue) { contender.process?.log ?? "" }

    // A life while a fix is at hand, as for the clients of a burst.
    figures.lifeWithFix = try await LifeMessages.count(on: bench, app: Contender.desktopId, othersActive: true)
    log(
        "\(kind.rawValue): a client's life with a fix at hand, \(figures.lifeWithFix.total) bus messages,"
            + " \(figures.lifeWithFix.service) from the service: \(figures.lifeWithFix.serviceSequence.joined(separator: ", "))"
    )

    func note(_ round: Round, _ label: String) {
        figures.unserved += round.unserved
        if figures.firstRefusal == nil { figures.firstRefusal = round.refusal }
        if round.unserved > 0 { log("\(kind.rawValue): \(label): \(round.unserved) unserved \(round.refusal ?? "")") }
        let sample = Sample(round.times)
        log("\(kind.rawValue): \(label): p50 \(sample.median) ms, p99 \(sample.percentile(99)) ms")
    }

    for (size, repeats) in [(1, 20), (100, 3), (200, 3)] {
        var times: [Double] = []
        for _ in 0..<repeats {
            let round = try await load.round(size, .own, desktopId: Contender.desktopId, timeout: 60)
            times += round.times
            figures.runP99[size, default: []].append(Sample(round.times).percentile(99))
            note(round, "\(size) at once on their own connections")
            try await load.delete(round)
            await pause(seconds: 0.2)
        }
        figures.firstLocation[size] = Sample(times)
    }

    /// One run of the burst of ``Options/clients`` apps at once on their own connections.
    var burstTimes: [Double] = []
    func burst() async throws -> Round {
        let round = try await load.round(options.clients, .own, desktopId: Contender.desktopId, timeout: 60)
        burstTimes += round.times
        figures.runP99[options.clients, default: []].append(Sample(round.times).percentile(99))
        note(round, "\(options.clients) at once on their own connections")
        return round
    }

    var start = meter.read()
    let pooled = try await load.round(options.clients, .pooled, desktopId: Contender.desktopId, timeout: 60)
    figures.pooledBurstCPU = meter.since(start)
    figures.pooledFirstLocation = Sample(pooled.times)
    note(pooled, "\(options.clients) at once on \(options.connections) connections (pooled)")
    try await load.delete(pooled)
    await pause(seconds: 1)

    // The first burst's clients stay for the memory figures and the soak; the other runs of the burst come after,
    // so that the memory figures follow the same history as ever.
    start = meter.read()
    let active = try await burst()
    figures.burstCPU = meter.since(start)

    await pause(seconds: 3)
    figures.withClients = ProcessFigures.memory(pid)
    log(
        "\(kind.rawValue): \(active.times.count + 1) clients: RSS \(figures.withClients.rss) KiB, private \(figures.withClients.privateKiB) KiB"
    )

    log("\(kind.rawValue): soak, \(options.soakSeconds) s at 1 fix/s with \(active.times.count + 1) clients")
    start = meter.read()
    let soakStart = (
        updates: try await load.updates(), epochs: contender.feeder.epochTimes.count, time: monotonicNanoseconds()
    )
    figures.soakStart = ProcessFigures.memory(pid)
    var elapsed = 0.0
    while elapsed < Double(options.soakSeconds) {
        await pause(seconds: min(10, Double(options.soakSeconds) - elapsed))
        elapsed = Double(monotonicNanoseconds() - soakStart.time) / 1e9
        figures.soakSamples.append((elapsed, ProcessFigures.memory(pid)))
    }
    figures.soakEnd = ProcessFigures.memory(pid)
    figures.soakSeconds = elapsed
    figures.soakUpdates = try await load.updates() - soakStart.updates
    figures.soakEpochs = contender.feeder.epochTimes.count - soakStart.epochs
    figures.soakCPU = meter.since(start)
    log(
        "\(kind.rawValue): soak: \(figures.soakUpdates) updates, service CPU \(figures.soakCPU.service) s, RSS \(figures.soakStart.rss) → \(figures.soakEnd.rss) KiB"
    )

    try await load.delete(active)
    for _ in 1..<options.burstRuns {
        await pause(seconds: 1)
        try await load.delete(try await burst())
    }
    figures.firstLocation[options.clients] = Sample(burstTimes)
    try await load.delete(keeper)
    // Warm up the allocator with a first round of clients as many at once as the churn will have (each load process
    // churns 500 at a time), then take the baseline.
    try await load.churn(min(options.churn, 500 * options.loadProcesses), .own, desktopId: Contender.desktopId)
    await pause(seconds: 3)
    figures.beforeChurn = ProcessFigures.memory(pid)
    log("\(kind.rawValue): \(options.churn) clients created and removed, each on a connection of its own")
    try await load.churn(options.churn, .own, desktopId: Contender.desktopId)
    await pause(seconds: 3)
    figures.afterChurn = ProcessFigures.memory(pid)
    log("\(kind.rawValue): churn: RSS \(figures.beforeChurn.rss) → \(figures.afterChurn.rss) KiB")

    await stopService(contender)
    return figures
}
