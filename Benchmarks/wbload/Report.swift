import Foundation
import Glibc

/// wbbench's gpsd report → LocationUpdated figures, read from its output.
struct GPSDFigures: Sendable {
    var p50: Double?
    var p99: Double?

    init(file: String?) {
        guard let file, let text = try? String(contentsOfFile: file, encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.contains("TPV at a plain client") })
        else { return }
        func value(_ key: String) -> Double? {
            guard let range = line.range(of: key + " ") else { return nil }
            return Double(line[range.upperBound...].prefix { $0.isNumber || $0 == "." })
        }
        p50 = value("p50")
        p99 = value("p99")
    }
}

/// The table and the JSON of a run.
struct Report {
    let options: Options
    let results: [ServiceKind: Figures]
    let gpsd: GPSDFigures

    private var ours: Figures? { results[.whereabouts] }
    private var theirs: Figures? { results[.geoclue] }

    private static func number(_ value: Double, _ digits: Int = 1) -> String {
        value.isFinite ? String(format: "%.\(digits)f", value) : "–"
    }

    private func row(
        _ label: String, _ value: (Figures) -> Double, unit: String, digits: Int = 1, target: Double? = nil
    ) -> [String] {
        let mine = ours.map(value)
        let other = theirs.map(value)
        var ratio = "–"
        var verdict = ""
        if let mine, let other, other > 0 {
            let r = mine / other
            ratio = String(format: "%.2f", r)
            if let target { verdict = r <= target ? "met (≤ \(target))" : "MISSED (≤ \(target))" }
        }
        return [
            label, mine.map { Self.number($0, digits) + " " + unit } ?? "–",
            other.map { Self.number($0, digits) + " " + unit } ?? "–", ratio, verdict,
        ]
    }

    /// The lowest and highest p99 of the runs of `size` clients at once, for both services.
    private func spreadRow(_ label: String, _ size: Int) -> [String] {
        func spread(_ figures: Figures?) -> String {
            guard let runs = figures?.runP99[size], let low = runs.min(), let high = runs.max() else { return "–" }
            return "\(Self.number(low, 0)) – \(Self.number(high, 0)) ms (\(runs.count) runs)"
        }
        return [label, spread(ours), spread(theirs), "", ""]
    }

    private func churnRow(_ label: String, _ memory: (Memory) -> Int) -> [String] {
        func change(_ figures: Figures?) -> (String, Double?) {
            guard let figures else { return ("–", nil) }
            let before = Double(memory(figures.beforeChurn))
            let after = Double(memory(figures.afterChurn))
            let percent = (after - before) / max(before, 1) * 100
            return ("\(Int(before)) → \(Int(after)) KiB (\(String(format: "%+.2f", percent)) %)", percent)
        }
        let (mine, percent) = change(ours)
        // Memory handed back after the churn (below the baseline) meets the target as well as memory that stayed.
        let verdict = percent.map { $0 <= 1 ? "met (at most +1 %)" : "MISSED (at most +1 %)" } ?? ""
        return [label, mine, change(theirs).0, "", verdict]
    }

    var rows: [[String]] {
        let clients = options.clients + 1
        var rows: [[String]] = [
            ["", ServiceKind.whereabouts.rawValue, ServiceKind.geoclue.rawValue, "ratio", "target"],
            row(
                "startup, exec → name owned (median)", { Sample($0.startup).median }, unit: "ms", digits: 2, target: 0.5
            ),
            row("idle RSS", { Double($0.idle.rss) / 1024 }, unit: "MiB", target: 1),
            row("idle private", { Double($0.idle.privateKiB) / 1024 }, unit: "MiB", target: 0.5),
            row("RSS, \(clients) active clients", { Double($0.withClients.rss) / 1024 }, unit: "MiB", target: 0.5),
            row(
                "private, \(clients) active clients", { Double($0.withClients.privateKiB) / 1024 }, unit: "MiB",
                target: 0.5),
            row("bus messages, a later client's life", { Double($0.life.total) }, unit: "", digits: 0, target: 0.6),
            row("  of them the client's own and the bus's", { Double($0.life.clients) }, unit: "", digits: 0),
            row("  of them the service's signals", { Double($0.life.serviceSignals) }, unit: "", digits: 0),
            row(
                "  of them the service's calls and what they set off", { Double($0.life.serviceCalls) }, unit: "",
                digits: 0),
            row(
                "bus messages, the same with a fix at hand (a burst's)", { Double($0.lifeWithFix.total) }, unit: "",
                digits: 0),
        ]
        for size in Set([1, 100, 200, options.clients]).sorted() {
            let label = "first location, \(size) at once, own connections"
            rows.append(row(label + ", p50", { $0.firstLocation[size]?.median ?? .nan }, unit: "ms", digits: 2))
            rows.append(
                row(label + ", p99", { $0.firstLocation[size]?.percentile(99) ?? .nan }, unit: "ms", digits: 2))
            guard size >= 200 else { continue }
            rows.append(
                row(
                    "  p99 of each run, median", { Sample($0.runP99[size] ?? []).median }, unit: "ms", digits: 2,
                    target: 0.5))
            rows.append(spreadRow("  p99 of each run, lowest – highest", size))
        }
        let cpu = "for those \(options.clients) clients"
        rows += [
            row("  service CPU \(cpu)", { $0.burstCPU.service }, unit: "s", digits: 2),
            row("  load CPU \(cpu)", { $0.burstCPU.load }, unit: "s", digits: 2),
            row("  dbus-daemon CPU \(cpu)", { $0.burstCPU.bus }, unit: "s", digits: 2),
            row("  polkitd CPU \(cpu)", { $0.burstCPU.polkit }, unit: "s", digits: 2),
            row(
                "first location, \(options.clients) at once pooled on \(options.connections) connections, p50",
                { $0.pooledFirstLocation.median }, unit: "ms", digits: 2),
            row(
                "first location, \(options.clients) at once pooled on \(options.connections) connections, p99",
                { $0.pooledFirstLocation.percentile(99) }, unit: "ms", digits: 2),
            row("  service CPU, pooled", { $0.pooledBurstCPU.service }, unit: "s", digits: 2),
            row("  dbus-daemon CPU, pooled", { $0.pooledBurstCPU.bus }, unit: "s", digits: 2),
            row("clients refused or unserved, all rounds", { Double($0.unserved) }, unit: "", digits: 0),
            row(
                "soak: LocationUpdated delivered per second", { Double($0.soakUpdates) / max($0.soakSeconds, 1) },
                unit: "/s", digits: 0),
            row("soak: service CPU per delivered update", { $0.cpuPerUpdate }, unit: "µs", target: 0.35),
            row("soak: service CPU per fix per client", { $0.cpuPerClientFix(clients: clients) }, unit: "µs"),
            row("soak: service CPU", { $0.soakCPU.service / max($0.soakSeconds, 1) * 100 }, unit: "% of a core"),
            row("soak: load CPU", { $0.soakCPU.load / max($0.soakSeconds, 1) * 100 }, unit: "% of a core"),
            row("soak: dbus-daemon CPU", { $0.soakCPU.bus / max($0.soakSeconds, 1) * 100 }, unit: "% of a core"),
            row("soak: RSS at the start", { Double($0.soakStart.rss) / 1024 }, unit: "MiB"),
            row("soak: RSS at the end", { Double($0.soakEnd.rss) / 1024 }, unit: "MiB"),
            row("soak: RSS growth per delivered update", { $0.growthPerUpdate }, unit: "B"),
            row("soak: private growth per delivered update", { $0.privateGrowthPerUpdate }, unit: "B"),
            churnRow("RSS before → after \(options.churn) clients came and went", \.rss),
            churnRow("private before → after \(options.churn) clients came and went", \.privateKiB),
        ]
        let refusals = ServiceKind.allCases.compactMap { kind in
            results[kind]?.firstRefusal.map { "\(kind.rawValue): \($0)" }
        }
        if !refusals.isEmpty { rows.append(["first refusal", refusals.joined(separator: "; "), "", "", ""]) }
        let gpsdText = [gpsd.p50, gpsd.p99].map { $0.map { String(format: "%.3f ms", $0) } ?? "–" }
        rows.append([
            "gpsd report → LocationUpdated, p50 / p99", gpsdText.joined(separator: " / "), "(not measured)", "", "",
        ])
        return rows
    }

    var table: String {
        let rows = rows
        let widths = (0..<5).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ").replacing(/\s+$/, with: "")
        }.joined(separator: "\n")
    }

    var header: String {
        var system = utsname()
        uname(&system)
        let machine = withUnsafeBytes(of: &system.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let date = ISO8601DateFormatter().string(from: Date())
        return
            "wbload \(date): \(ProcessInfo.processInfo.activeProcessorCount) cores \(machine), soak \(options.soakSeconds) s,"
            + " one bus with polkitd and the package's policy, load as \(BenchBus.loadUser) in"
            + " \(options.loadProcesses) processes with each client on a"
            + " connection of its own (one round of \(options.clients) pooled on \(options.connections) connections),"
            + " \(options.churn) clients churned, startup median of \(options.startupRuns)"
    }

    func json() throws -> Data {
        var services: [String: Any] = [:]
        for (kind, figures) in results {
            var firstLocation: [String: Any] = [:]
            for (size, sample) in figures.firstLocation {
                firstLocation[String(size)] = [
                    "p50_ms": sample.median, "p99_ms": sample.percentile(99), "n": sample.values.count,
                    "p99_ms_of_each_run": figures.runP99[size] ?? [],
                ]
            }
            func memory(_ value: Memory) -> [String: Int] { ["rss_kib": value.rss, "private_kib": value.privateKiB] }
            func cpu(_ value: CPU) -> [String: Double] {
                ["service": value.service, "load": value.load, "bus": value.bus, "polkitd": value.polkit]
            }
            services[kind.key] = [
                "startup_ms": figures.startup, "startup_median_ms": Sample(figures.startup).median,
                "idle": memory(figures.idle), "with_clients": memory(figures.withClients),
                "life_messages": [
                    "total": figures.life.total, "clients": figures.life.clients,
                    "service_signals": figures.life.serviceSignals, "service_calls": figures.life.serviceCalls,
                    "with_fix_at_hand": figures.lifeWithFix.total,
                ],
                "first_location": firstLocation,
                "first_location_pooled": [
                    "p50_ms": figures.pooledFirstLocation.median, "p99_ms": figures.pooledFirstLocation.percentile(99),
                    "n": figures.pooledFirstLocation.values.count,
                ],
                "burst_cpu_s": cpu(figures.burstCPU), "pooled_burst_cpu_s": cpu(figures.pooledBurstCPU),
                "unserved": figures.unserved, "first_refusal": figures.firstRefusal as Any? ?? NSNull(),
                "soak": [
                    "seconds": figures.soakSeconds, "updates": figures.soakUpdates, "epochs": figures.soakEpochs,
                    "cpu_s": cpu(figures.soakCPU),
                    "cpu_per_update_us": figures.cpuPerUpdate,
                    "cpu_per_client_fix_us": figures.cpuPerClientFix(clients: options.clients + 1),
                    "start": memory(figures.soakStart), "end": memory(figures.soakEnd),
                    "rss_growth_per_update_bytes": figures.growthPerUpdate,
                    "private_growth_per_update_bytes": figures.privateGrowthPerUpdate,
                    "samples": figures.soakSamples.map {
                        ["seconds": $0.seconds, "rss_kib": $0.memory.rss, "private_kib": $0.memory.privateKiB]
                    },
                ],
                "churn": ["before": memory(figures.beforeChurn), "after": memory(figures.afterChurn)],
            ]
        }
        let document: [String: Any] = [
            "date": ISO8601DateFormatter().string(from: Date()), "cores": ProcessInfo.processInfo.activeProcessorCount,
            "options": [
                "soak_seconds": options.soakSeconds, "clients": options.clients, "connections": options.connections,
                "churn": options.churn, "startup_runs": options.startupRuns, "load_processes": options.loadProcesses,
            ],
            "services": services,
            "gpsd_report_to_location_updated_ms": [
                "p50": gpsd.p50 as Any? ?? NSNull(), "p99": gpsd.p99 as Any? ?? NSNull(),
            ],
        ]
        return try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
    }

    /// Prints the table and the JSON, and writes both to the output folder (`bench.txt`, `bench.json`, and a copy
    /// of the JSON named after the time).
    func write() throws {
        let text = header + "\n\n" + table + "\n"
        let data = try json()
        print(text)
        print(String(decoding: data, as: UTF8.self))
        let folder = URL(fileURLWithPath: options.output)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try text.write(to: folder.appendingPathComponent("bench.txt"), atomically: true, encoding: .utf8)
        try data.write(to: folder.appendingPathComponent("bench.json"))
        let stamp = Int(Date().timeIntervalSince1970)
        try data.write(to: folder.appendingPathComponent("bench-\(stamp).json"))
    }
}
