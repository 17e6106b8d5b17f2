// wbbench: figures for the gpsd path (issue 3), not tests. A private bus, the real whereaboutsd, a real gpsd fed
// through a pseudo-terminal whose write times are known, and clients measuring when LocationUpdated arrives.
//
//   swift build -c release && .build/release/wbbench [--reports N] [--interval MS] [--trials N]
//
// 1. gpsd report → LocationUpdated: N epochs, one every MS milliseconds; for each, the time from the write to the
//    pty (and from the moment a plain gpsd client got gpsd's TPV) to the LocationUpdated signal reaching a client.
// 2. Time to first location for a new client while gpsd has a fix, three ways: while another client keeps gpsd
//    watched (the service hands over its latest fix); with gpsd unwatched and the receiver silent (only gpsd's
//    answer to ?POLL can serve it); with gpsd unwatched and the receiver reporting at 1 Hz (what a user sees).
//
//   .build/release/wbbench --modem [--reports N] [--interval MS]
//
// The modem path instead (ModemBench): ModemManager's Location update → LocationUpdated, for whereaboutsd and
// GeoClue 2.6's modem GPS source side by side, each as its package installs it, through Debian's own ModemManager
// on the emulated modem: N epochs at the receiver's 1 Hz, then N epochs streamed every MS milliseconds.
//
//   .build/release/wbbench --first-fix [--trials N] [--cold-start S (35)] [--assisted-start S (18)]
//
// Time to the first exact fix from a modem receiver that starts cold (FirstFixBench): whereaboutsd with predicted
// orbits downloaded, from its cache, and without, and GeoClue 2.6, against the ModemManager stand-in's receiver.
//
//   .build/release/wbbench --sky [--reports N]
//
// What the satellites in view cost (SkyBench): messages on the bus and CPU per epoch of a real gpsd's sky, for an
// exact client without and with a satellite watcher.
import DBus
import Foundation
import Glibc
import Loop
import TestSupport

struct Options {
    var reports = 100
    var interval = 100
    var trials = 10
    /// `--modem`: measure the modem path (``ModemBench``), whereaboutsd's and GeoClue's, instead of gpsd's.
    var modem = false
    /// `--first-fix`: measure the time to a modem receiver's first fix (``FirstFixBench``) instead.
    var firstFix = false
    /// `--sky`: measure what the satellites in view cost per epoch (``SkyBench``) instead.
    var sky = false
    /// The stand-in receiver's time to first fix from a cold start, in seconds.
    var coldStart = 35
    /// The stand-in receiver's time to first fix once orbits were injected, in seconds.
    var assistedStart = 18

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            if flag == "--modem" {
                options.modem = true
                continue
            }
            if flag == "--first-fix" {
                options.firstFix = true
                continue
            }
            if flag == "--sky" {
                options.sky = true
                continue
            }
            guard let text = rest.popFirst(), let value = Int(text), value > 0 else { usage() }
            switch flag {
            case "--reports": options.reports = value
            case "--interval": options.interval = value
            case "--trials": options.trials = value
            case "--cold-start": options.coldStart = value
            case "--assisted-start": options.assistedStart = value
            default: usage()
            }
        }
        return options
    }

    static func usage() -> Never {
        print(
            "usage: wbbench [--modem | --first-fix | --sky] [--reports N (100)] [--interval MS (100)] [--trials N (10)] "
                + "[--cold-start S (35)] [--assisted-start S (18)]")
        exit(2)
    }
}

/// Milliseconds from monotonic nanoseconds.
func ms(_ nanoseconds: Int64) -> Double { Double(nanoseconds) / 1e6 }

func summary(_ values: [Double]) -> String {
    guard !values.isEmpty else { return "no samples" }
    func f(_ p: Double) -> String { String(format: "%.3f", Percentile.of(values, p)!) }
    let mean = values.reduce(0, +) / Double(values.count)
    return
        "p50 \(f(50)) ms, p90 \(f(90)) ms, p99 \(f(99)) ms, max \(f(100)) ms, mean \(String(format: "%.3f", mean)) ms (n=\(values.count))"
}

@concurrent func makeHarness(port: UInt16) async throws -> DaemonHarness {
    let harness = try DaemonHarness(config: "[gpsd]\nenable=true\nhost=127.0.0.1\nport=\(port)\n")
    try harness.startDaemon()
    return harness
}

@concurrent func pause(_ milliseconds: Int) async { try? await Task.sleep(for: .milliseconds(milliseconds)) }

/// An exact-level client, set up but not started, recording when its LocationUpdated signals arrive.
@BusActor
func exactClient(_ harness: DaemonHarness) async throws -> (GeoClueTestClient, ObjectPath, UpdateArrivals) {
    let app = try await GeoClueTestClient(bus: harness.bus)
    let arrivals = try await UpdateArrivals(app)
    let path = try await app.getClient()
    try await app.set(path, GeoClueTestClient.clientInterface, "DesktopId", .string("wbbench"))
    try await app.set(path, GeoClueTestClient.clientInterface, "RequestedAccuracyLevel", .uint32(8))
    return (app, path, arrivals)
}

/// Starts a new client and returns the milliseconds from sending Start to its first LocationUpdated, or nil
/// when none came within `limit`.
@BusActor
func firstLocation(_ harness: DaemonHarness, limit: Duration = .seconds(2)) async throws -> Double? {
    let (app, path, arrivals) = try await exactClient(harness)
    defer { app.close() }
    let sent = monotonicNanoseconds()
    _ = try await app.call(path, GeoClueTestClient.clientInterface, "Start")
    let deadline = ContinuousClock.now + limit
    while arrivals.times.isEmpty && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
    return arrivals.times.first.map { ms($0 - sent) }
}

@BusActor
func run(_ options: Options) async throws {
    let directory = try TemporaryDirectory.make(prefix: "wbbench")
    defer { try? FileManager.default.removeItem(at: directory) }
    let terminal = try ReceiverTerminal()
    defer { terminal.close() }
    let port = try LoopbackTCP.freePort()
    let gpsd = GPSDProcess(device: terminal.path, port: port, logFile: directory.appendingPathComponent("gpsd.log"))
    try await gpsd.start()
    defer { gpsd.stop() }
    let watcher = try GPSDWatcher(port: port)
    defer { watcher.close() }
    let epoch: @Sendable (Int, Double) -> NMEAEpoch = { index, now in
        NMEAEpoch(time: now, latitude: 48.1 + Double(index % 1000) * 0.00001, longitude: 11.5)
    }
    // Bring gpsd to one report per epoch (it reports sentence by sentence until it has seen a whole epoch).
    let warmup = NMEAFeeder(terminal: terminal, interval: .milliseconds(100), epoch: epoch)
    warmup.start()
    let synced = try await watcher.timedFix()
    _ = try await watcher.timedFix(after: synced.receivedAt)
    warmup.stop()
    await warmup.stopped()

    let harness = try await makeHarness(port: port)
    defer { harness.stop() }
    print(
        "wbbench: whereaboutsd \(try ProjectPaths.product("whereaboutsd").path), gpsd on \(terminal.path), "
            + "\(ProcessInfo.processInfo.activeProcessorCount) cores")

    // 1. Report → LocationUpdated.
    let (app, path, arrivals) = try await exactClient(harness)
    defer { app.close() }
    _ = try await app.call(path, GeoClueTestClient.clientInterface, "Start")
    let skip = 5
    let feeder = NMEAFeeder(terminal: terminal, interval: .milliseconds(options.interval), epoch: epoch)
    feeder.start()
    while feeder.writes.count < skip + options.reports + 1 { await pause(options.interval) }
    feeder.stop()
    await feeder.stopped()
    await pause(500)
    let writes = feeder.writes
    let times = arrivals.times
    let tpvs = watcher.fixes.map(\.receivedAt)
    var endToEnd: [Double] = []
    var daemonShare: [Double] = []
    var gpsdShare: [Double] = []
    var unmatched = 0
    var extra = 0
    for index in skip..<(skip + options.reports) {
        let start = writes[index].writtenAt
        let end = writes[index + 1].writtenAt
        let received = times.filter { $0 >= start && $0 < end }
        let reported = tpvs.filter { $0 >= start && $0 < end }
        guard let arrival = received.first else {
            unmatched += 1
            continue
        }
        extra += received.count - 1
        endToEnd.append(ms(arrival - start))
        if let tpv = reported.first {
            gpsdShare.append(ms(tpv - start))
            daemonShare.append(ms(arrival - tpv))
        }
    }
    print("\n1. gpsd report → LocationUpdated received, \(options.reports) reports, one every \(options.interval) ms")
    print("   pty write → LocationUpdated:           \(summary(endToEnd))")
    print("   pty write → TPV at a plain gpsd client: \(summary(gpsdShare))")
    print("   TPV at a plain client → LocationUpdated: \(summary(daemonShare))")
    if unmatched > 0 || extra > 0 {
        print("   \(unmatched) reports without a LocationUpdated, \(extra) extra LocationUpdated")
    }

    // 2. Time to first location.
    print("\n2. New client → first LocationUpdated (from sending Start), gpsd holding a fix")
    var warm: [Double] = []
    for _ in 0..<options.trials {
        if let elapsed = try await firstLocation(harness) { warm.append(elapsed) }
        await pause(50)
    }
    print("   another client active (gpsd watched):    \(summary(warm))")
    _ = try await app.call(path, GeoClueTestClient.clientInterface, "Stop")
    await pause(500)

    var silent: [Double] = []
    for _ in 0..<options.trials {
        if let elapsed = try await firstLocation(harness) { silent.append(elapsed) }
        await pause(400)
    }
    print(
        "   no other client, receiver silent (?POLL): \(silent.isEmpty ? "none within 2 s in \(options.trials) trials" : summary(silent))"
            + (silent.count < options.trials && !silent.isEmpty
                ? "; \(options.trials - silent.count) trials had none within 2 s" : ""))

    let hertz = NMEAFeeder(terminal: terminal, interval: .seconds(1), epoch: epoch)
    hertz.start()
    defer { hertz.stop() }
    var oneHertz: [Double] = []
    for trial in 0..<options.trials {
        // Spread the starts over the receiver's second.
        await pause(400 + 137 * trial % 1000)
        if let elapsed = try await firstLocation(harness) { oneHertz.append(elapsed) }
    }
    print("   no other client, receiver at 1 Hz:        \(summary(oneHertz))")
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
Task { @BusActor in
    do {
        if options.modem {
            try await ModemBench.run(options)
        } else if options.firstFix {
            try await FirstFixBench.run(options)
        } else if options.sky {
            try await SkyBench.run(options)
        } else {
            try await run(options)
        }
        exit(0)
    } catch {
        print("wbbench: \(error)")
        exit(1)
    }
}
while true { pause() }
