import FuzzSupport
import WhereaboutsCore

/// The time the inputs are read at: 2023-11-14T22:28:20Z, 900 s after the seed files' regions were added.
private let now = WallTime(microseconds: 1_700_000_900_000_000)

/// The regions file: parsed; an accepted file's monitor writes a text that reads back to the same regions and
/// pending events, and is written the same way again; after a fix and time passing it still does.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRegions(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = String(validating: UnsafeBufferPointer(start: data, count: size), as: UTF8.self) else { return 0 }
    var monitor: RegionMonitor
    do {
        monitor = try RegionFile.parse(text, now: now)
    } catch {
        precondition(error.line >= 1, "an error names no line: \(error)")
        _ = error.description
        return 0
    }
    checkRoundTrip(monitor)
    for owner in monitor.owners {
        let records = monitor.records(of: owner)
        precondition(!records.isEmpty && records.count <= Region.limitPerOwner, "\(records.count) regions")
        precondition(zip(records, records.dropFirst()).allSatisfy { $0.region.id < $1.region.id }, "not by id")
        for record in records { checkRecord(record) }
    }
    guard let owner = monitor.owners.first, let region = monitor.records(of: owner).first?.region else { return 0 }
    let fix = RegionFix(
        latitude: region.latitude, longitude: region.longitude, accuracy: 10, timestamp: now.advanced(by: .seconds(1)))
    let coarsened = RegionFix(
        latitude: region.latitude, longitude: region.longitude, accuracy: 5_000, timestamp: fix.timestamp)
    let events = monitor.observe(fix, coarsened: coarsened) { $0.user % 2 == 1 }
    precondition(events.allSatisfy { ($0.state == .unknown) == ($0.fix == nil) }, "an event's fix does not fit")
    _ = monitor.queue(events)
    let (later, removals) = monitor.timePassed(now: now.advanced(by: .seconds(86_400)))
    precondition(later.allSatisfy { $0.state == .dwelling || $0.state == .unknown }, "a timed entry or exit")
    precondition(removals.allSatisfy { $0.reason == .expired && !$0.ids.isEmpty }, "an empty removal")
    _ = monitor.queue(later)
    _ = monitor.neededLevel(at: fix) { _ in true }
    checkRoundTrip(monitor, at: now.advanced(by: .seconds(86_400)))
    return 0
}

private func checkRecord(_ record: RegionRecord) {
    let region = record.region
    precondition(region.latitude.isFinite && abs(region.latitude) <= 90, "latitude \(region.latitude)")
    precondition(region.longitude.isFinite && abs(region.longitude) <= 180, "longitude \(region.longitude)")
    precondition(
        (Region.minimumRadius...Region.maximumRadius).contains(region.radius), "radius \(region.radius)")
    precondition(!region.id.isEmpty && region.id.utf8.count <= Region.maximumIDBytes, "id \(region.id)")
    if let expires = region.options.expires { precondition(expires > now, "an expired region was kept") }
    precondition(record.since == nil || record.state != .unknown, "an unknown region has a time")
}

/// The monitor's text parses to the same regions and pending events, and is written the same way again.
private func checkRoundTrip(_ monitor: RegionMonitor, at time: WallTime = now) {
    let text = RegionFile.serialize(monitor)
    var reparsed: RegionMonitor
    do {
        reparsed = try RegionFile.parse(text, now: time)
    } catch {
        preconditionFailure("a monitor's own text is refused: \(error)\n\(text)")
    }
    precondition(RegionFile.serialize(reparsed) == text, "a monitor's own text is not written the same way again")
    precondition(reparsed.owners == monitor.owners && reparsed.count == monitor.count, "regions differ")
    precondition(reparsed.nextDeadline == monitor.nextDeadline, "deadlines differ")
    var original = monitor
    for owner in monitor.owners {
        precondition(reparsed.records(of: owner) == monitor.records(of: owner), "records differ")
        precondition(reparsed.takePending(for: owner) == original.takePending(for: owner), "pending events differ")
    }
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzRegions) }
    }
#endif
