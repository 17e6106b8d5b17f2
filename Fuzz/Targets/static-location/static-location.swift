import FuzzSupport
import WhereaboutsCore

/// The static location file (`/etc/geolocation`): parsed, and an accepted location checked against the ranges
/// the parser promises.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStaticLocation(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = String(validating: UnsafeBufferPointer(start: data, count: size), as: UTF8.self) else { return 0 }
    do {
        let location = try StaticLocationFile.parse(text, file: "geolocation")
        precondition(abs(location.latitude) <= 90 && abs(location.longitude) <= 180, "coordinates out of range")
        precondition(location.altitude.isFinite && location.accuracy >= 0, "altitude or accuracy out of range")
        checkFix(location.fix(at: WallTime(seconds: 1_700_000_000)), allowingZeroAccuracy: true)
    } catch {
        precondition(error.line >= 1, "an error names no line")
        _ = error.description
    }
    return 0
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzStaticLocation) }
    }
#endif
