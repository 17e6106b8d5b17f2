import FuzzSupport
import WhereaboutsCore

/// The time the inputs are read at: 2023-11-14T22:28:20Z, 900 s after the seed files' first entries were stored.
private let now = WallTime(microseconds: 1_700_000_900_000_000)

/// The cell answer cache file: parsed; an accepted cache holds only valid entries, and its own text parses to the
/// same entries, also after a lookup has reordered them. A lookup with the cells of an entry, in any order, finds
/// that entry.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCellCache(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = String(validating: UnsafeBufferPointer(start: data, count: size), as: UTF8.self) else { return 0 }
    var cache: CellAnswerCache
    do {
        cache = try CellAnswerCache.parse(text, now: now)
    } catch {
        precondition(error.line >= 1, "an error names no line: \(error)")
        _ = error.description
        return 0
    }
    precondition(
        cache.count <= cache.capacity && cache.capacity == CellAnswerCache.defaultCapacity, "more than capacity")
    let entries = cache.entries
    precondition(entries.count == cache.count, "entries and count differ")
    entries.forEach(checkEntry)
    precondition(Set(entries.map(\.cells)).count == entries.count, "two entries for the same cells")
    checkRoundTrip(cache)

    // A small cache keeps the most recently used: the last lines.
    let small: CellAnswerCache
    do {
        small = try CellAnswerCache.parse(text, now: now, capacity: 3)
    } catch {
        preconditionFailure("a text accepted at capacity \(CellAnswerCache.defaultCapacity) is refused at 3: \(error)")
    }
    precondition(small.count <= 3, "more than capacity 3")
    checkSame(small.entries, Array(entries.suffix(3)))

    guard let first = entries.first else { return 0 }
    guard let hit = cache.lookup(first.cells.reversed(), now: now) else {
        preconditionFailure("an entry's own cells miss")
    }
    checkSame([hit], [first])
    precondition(cache.count == entries.count, "a lookup changed the count")
    precondition(cache.entries.last == first, "a hit is not the most recently used")
    checkRoundTrip(cache)
    return 0
}

private func checkEntry(_ entry: CellAnswerCache.Entry) {
    precondition(entry.latitude.isFinite && abs(entry.latitude) <= 90, "latitude out of range: \(entry.latitude)")
    precondition(entry.longitude.isFinite && abs(entry.longitude) <= 180, "longitude out of range: \(entry.longitude)")
    precondition(
        entry.accuracy.isFinite && entry.accuracy > 0 && entry.accuracy <= IchnaeaOutcome.maximumCellAccuracy,
        "accuracy out of range: \(entry.accuracy)")
    let count = entry.cells.count
    precondition((1...CellAnswerCache.maximumCellsPerEntry).contains(count), "\(count) cells")
    precondition(CellAnswerCache.key(entry.cells) == entry.cells, "cells not each once in key order")
    for cell in entry.cells {
        let remade = Result { () throws(CellLocationError) in
            try ServingCell(
                radio: cell.radio, mobileCountryCode: cell.mobileCountryCode,
                mobileNetworkCode: cell.mobileNetworkCode, areaCode: cell.areaCode, cellID: cell.cellID)
        }
        precondition((try? remade.get()) == cell, "a cell ServingCell refuses: \(cell)")
    }
    let age = now.since(entry.stored)
    precondition(
        age <= CellAnswerCache.maximumAge && age >= .zero - PositionCache.futureTolerance, "an expired entry was kept")
}

/// The cache's text parses to the same entries in the same order, and is written the same way again.
private func checkRoundTrip(_ cache: CellAnswerCache) {
    let text = cache.serialized()
    let reparsed: CellAnswerCache
    do {
        reparsed = try CellAnswerCache.parse(text, now: now)
    } catch {
        preconditionFailure("a cache's own text is refused: \(error)\n\(text)")
    }
    checkSame(reparsed.entries, cache.entries)
    precondition(reparsed.serialized() == text, "a cache's own text is not written the same way again")
}

private func checkSame(_ read: [CellAnswerCache.Entry], _ expected: [CellAnswerCache.Entry]) {
    checkSameEntries(read, expected) { entry, other in precondition(entry.cells == other.cells, "cells differ") }
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzCellCache) }
    }
#endif
