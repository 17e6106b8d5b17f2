// wbload: GeoClue2-compatible services side by side under load (make bench), not tests. Both services are
// measured in turn on one private bus (raised limits) that a real polkitd serves with the package's policy
// (``BenchBus``); each reads the same kind of receiver (NMEA at 1 fix/s from a Unix socket) at exact level, and is
// driven by load clients running as an unprivileged user in a child process, each client on a bus connection of
// its own as apps are, with one round on a few pooled connections shown beside, named as such:
//
//   swift build -c release && .build/release/wbload [--soak-seconds N] [--gpsd-report WBBENCH-OUTPUT] ...
//
// Startup (exec → bus name owned), memory (RSS and private) at idle, with the clients active and after a churn of
// clients, time to first location for 1, 100, 200 and N concurrent clients, service CPU per delivered update
// during a soak at 1 fix/s and memory growth over it. Prints a table with the ratios whereaboutsd/GeoClue against
// the targets, and writes it with a JSON copy to the output folder. The load's, dbus-daemon's and polkitd's CPU
// are printed next to the service's. `--attacks SECONDS` runs instead what one local user can keep doing to the
// daemon (Tests/Clients/attack.py) with a probe user's GetClient timed during each (``Attack``); `--regions`
// what geofencing costs: CPU per fix with 10,000 regions over 10 apps against none, and memory per region
// (``measureRegions(on:_:)``); `--memory-steps 250,500,1000` whereaboutsd's memory by kind of mapping as clients
// are added (``measureMemorySteps(on:_:)``); `--floor` the bursts against a service that does the least any could
// (``FloorManager``), beside the real ones (``measureFloor(on:_:)``).
import Foundation
import Glibc
import TestSupport

if CommandLine.arguments.dropFirst().first == "--load-child" { runLoadChild(Array(CommandLine.arguments.dropFirst(2))) }
if CommandLine.arguments.dropFirst().first == "--floor-service" {
    runFloorService(Array(CommandLine.arguments.dropFirst(2)))
}
let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
Task.detached {
    do {
        let bench = try BenchBus()
        defer { bench.stop() }
        if options.attacks {
            try finish(attackTable(try await measureAttacks(on: bench, options), options), "attacks.txt", bench)
        }
        if !options.memorySteps.isEmpty {
            try finish(try await measureMemorySteps(on: bench, options), "memory-steps.txt", bench)
        }
        if options.floor { try finish(try await measureFloor(on: bench, options), "floor.txt", bench) }
        if options.regions {
            try finish(regionTable(try await measureRegions(on: bench, options)), "regions.txt", bench)
        }
        var results: [ServiceKind: Figures] = [:]
        for kind in options.services { results[kind] = try await measure(kind, on: bench, options) }
        let report = Report(options: options, results: results, gpsd: GPSDFigures(file: options.gpsdReport))
        try report.write()
        bench.stop()
        exit(0)
    } catch {
        print("wbload: \(error)")
        exit(1)
    }
}
while true { pause() }

/// Prints the table of a round run alone, writes it to `file` in the output folder, and ends.
func finish(_ table: String, _ file: String, _ bench: BenchBus) throws -> Never {
    print(table, terminator: "")
    try FileManager.default.createDirectory(atPath: options.output, withIntermediateDirectories: true)
    try table.write(toFile: options.output + "/" + file, atomically: true, encoding: .utf8)
    bench.stop()
    exit(0)
}
