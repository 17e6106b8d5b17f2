import FuzzSupport
import WhereaboutsCore

/// The time the inputs are read at: 2023-11-14T22:28:20Z, 900 s after the seed files' first entries were stored.
private let now = WallTime(microseconds: 1_700_000_900_000_000)

/// The position cache file: parsed; an accepted cache holds only valid entries, and its own text parses to the
/// same entries, also after a lookup has reordered them. A lookup with the access points of an entry finds that
/// place, or one as similar.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPositionCache(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = String(validating: UnsafeBufferPointer(start: data, count: size), as: UTF8.self) else { return 0 }
    var cache: PositionCache
    do {
        cache = try PositionCache.parse(text, now: now)
    } catch {
        precondition(error.line >= 1, "an error names no line: \(error)")
        _ = error.description
        return 0
    }
    precondition(cache.count <= cache.capacity && cache.capacity == PositionCache.defaultCapacity, "more than capacity")
    let entries = cache.entries
    precondition(entries.count == cache.count, "entries and count differ")
    entries.forEach(checkEntry)
    checkRoundTrip(cache)

    // A small cache keeps the most recently used: the last lines.
    let small: PositionCache
    do {
        small = try PositionCache.parse(text, now: now, capacity: 3)
    } catch {
        preconditionFailure("a text accepted at capacity \(PositionCache.defaultCapacity) is refused at 3: \(error)")
    }
    precondition(small.count <= 3, "more than capacity 3")
    checkSame(small.entries, Array(entries.suffix(3)))

    guard let first = entries.first else { return 0 }
    let scan = first.accessPoints.map { AccessPoint(bssid: $0.bssid, ssid: Array("net".utf8), signal: $0.signal) }
    guard let hit = cache.lookup(scan, now: now) else { preconditionFailure("an entry's own access points miss") }
    precondition(hit.latitude.isFinite && abs(hit.latitude) <= 90, "hit latitude out of range: \(hit.latitude)")
    precondition(hit.longitude.isFinite && abs(hit.longitude) <= 180, "hit longitude out of range: \(hit.longitude)")
    precondition(
        hit.accuracy.isFinite && hit.accuracy > 0 && hit.accuracy <= PositionCache.maximumAccuracy,
        "hit accuracy out of range: \(hit.accuracy)")
    precondition(
        hit.origin == .network || hit.accuracy >= PositionCache.learnedAccuracyFloor,
        "a learnt place below the floor: \(hit.accuracy)")
    precondition(hit.similarity == 1, "an entry's own access points are only \(hit.similarity) similar")
    precondition(entries.contains { $0.stored == hit.stored && $0.origin == hit.origin }, "a hit from no entry")
    precondition(cache.count == entries.count, "a lookup changed the count")
    checkRoundTrip(cache)
    return 0
}

private func checkEntry(_ entry: PositionCache.Entry) {
    precondition(entry.latitude.isFinite && abs(entry.latitude) <= 90, "latitude out of range: \(entry.latitude)")
    precondition(entry.longitude.isFinite && abs(entry.longitude) <= 180, "longitude out of range: \(entry.longitude)")
    switch entry.origin {
    case .network:
        precondition(
            entry.accuracy.isFinite && entry.accuracy > 0 && entry.accuracy <= PositionCache.maximumAccuracy,
            "answer accuracy out of range: \(entry.accuracy)")
    case .learned:
        precondition(
            entry.accuracy.isFinite && entry.accuracy >= 0 && entry.accuracy < PositionCache.learnAccuracyBelow,
            "learnt accuracy out of range: \(entry.accuracy)")
    }
    let count = entry.accessPoints.count
    precondition((2...PositionCache.maximumAccessPointsPerEntry).contains(count), "\(count) access points")
    precondition(Set(entry.accessPoints.map(\.bssid)).count == count, "an address listed twice")
    for sighting in entry.accessPoints {
        precondition((-100 ... -10).contains(sighting.signal), "signal out of range: \(sighting.signal)")
    }
    precondition(
        zip(entry.accessPoints, entry.accessPoints.dropFirst()).allSatisfy { $0.signal >= $1.signal },
        "access points not strongest first")
    let age = now.since(entry.stored)
    let maximum = entry.origin == .network ? PositionCache.networkMaximumAge : PositionCache.learnedMaximumAge
    precondition(age <= maximum && age >= .zero - PositionCache.futureTolerance, "an expired entry was kept")
}

/// The cache's text parses to the same entries in the same order, and is written the same way again.
private func checkRoundTrip(_ cache: PositionCache) {
    let text = cache.serialized()
    let reparsed: PositionCache
    do {
        reparsed = try PositionCache.parse(text, now: now)
    } catch {
        preconditionFailure("a cache's own text is refused: \(error)\n\(text)")
    }
    checkSame(reparsed.entries, cache.entries)
    precondition(reparsed.serialized() == text, "a cache's own text is not written the same way again")
}

private func checkSame(_ read: [PositionCache.Entry], _ expected: [PositionCache.Entry]) {
    checkSameEntries(read, expected) { entry, other in
        precondition(entry.origin == other.origin, "origin differs")
        precondition(entry.accessPoints == other.accessPoints, "access points differ")
    }
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzPositionCache) }
    }
#endif
