// wbload: GeoClue2-compatible services side by side under load (make bench), not tests. Each service runs on a
// private bus of its own (raised limits), reads the same kind of receiver (NMEA at 1 fix/s from a Unix socket) at
// exact level, and is driven by load clients spread over a few connections in this process:
//
//   swift build -c release && .build/release/wbload [--soak-seconds N] [--gpsd-report WBBENCH-OUTPUT] ...
//
// Startup (exec → bus name owned), memory (RSS and private) at idle, with the clients active and after a churn of
// clients, time to first location for 1, 100 and N concurrent clients, service CPU per delivered update during a
// soak at 1 fix/s and memory growth over it. Prints a table with the ratios whereaboutsd/GeoClue against the
// targets, and writes it with a JSON copy to the output folder. The load's own CPU is printed next to the service's.
import Foundation
import Glibc
import Loop
import TestSupport

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
Task.detached {
    do {
        var results: [ServiceKind: Figures] = [:]
        for kind in options.services { results[kind] = try await measure(kind, options) }
        let report = Report(options: options, results: results, gpsd: GPSDFigures(file: options.gpsdReport))
        try report.write()
        exit(0)
    } catch {
        print("wbload: \(error)")
        exit(1)
    }
}
while true { pause() }
