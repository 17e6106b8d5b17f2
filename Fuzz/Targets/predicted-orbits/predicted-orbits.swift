import FuzzSupport
import WhereaboutsCore

/// The time the inputs are read at: 2023-11-14T22:28:20Z.
private let now = WallTime(microseconds: 1_700_000_900_000_000)

/// The predicted-orbit cache file: parsed; an accepted cache holds only files valid now (for 14 days at most), of 1
/// byte to 1 MiB, for 1 to 8 servers, one per list of servers, at most its capacity; its own text parses to the
/// same files and is written the same way again; each file is found by its servers.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPredictedOrbits(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = String(validating: UnsafeBufferPointer(start: data, count: size), as: UTF8.self) else { return 0 }
    let cache: PredictedOrbitCache
    do {
        cache = try PredictedOrbitCache.parse(text, now: now, capacity: PredictedOrbitCache.defaultCapacity)
    } catch {
        precondition(error.line >= 1, "an error names no line: \(error)")
        _ = error.description
        return 0
    }
    precondition(cache.files.count <= cache.capacity, "more than capacity")
    precondition(Set(cache.files.map(\.servers)).count == cache.files.count, "two files for the same servers")
    for file in cache.files {
        precondition(file.isValid(at: now), "an expired file was kept")
        precondition(file.downloaded <= file.expires, "a file expires before its download")
        precondition((1...PredictedOrbitFile.maximumSize).contains(file.data.count), "\(file.data.count) bytes")
        precondition(
            (1...PredictedOrbitCache.maximumServers).contains(file.servers.count), "\(file.servers.count) servers")
        precondition(
            file.expires.since(file.downloaded) <= PredictedOrbitValidity.maximumValidity, "valid for over 14 days")
        precondition(
            ([file.source] + file.servers).allSatisfy(PredictedOrbitCache.isPlainURL), "a URL that is not plain")
        precondition(cache.file(for: file.servers, at: now) == file, "a file is not found by its servers")
    }
    let own = cache.serialized()
    let reparsed: PredictedOrbitCache
    do {
        reparsed = try PredictedOrbitCache.parse(own, now: now, capacity: PredictedOrbitCache.defaultCapacity)
    } catch {
        preconditionFailure("a cache's own text is refused: \(error)\n\(own)")
    }
    precondition(reparsed == cache, "a cache's own text reads as another")
    precondition(reparsed.serialized() == own, "a cache's own text is not written the same way again")
    return 0
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzPredictedOrbits) }
    }
#endif
