import FuzzSupport
import WhereaboutsCore

/// The grants file: parsed, and when accepted, written back and parsed again to the same store.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGrantStore(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = String(validating: UnsafeBufferPointer(start: data, count: size), as: UTF8.self),
        let store = try? GrantStore.parse(text, file: "grants")
    else { return 0 }
    let reparsed: GrantStore
    do {
        reparsed = try GrantStore.parse(store.text, file: "grants")
    } catch {
        preconditionFailure("a store's own text is refused: \(error)")
    }
    precondition(reparsed == store, "a store's own text parses to a different store")
    return 0
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzGrantStore) }
    }
#endif
