import FuzzSupport
import GPSD
import WhereaboutsCore
import WhereaboutsProviders

/// gpsd's JSON reports as the provider reads them: the input, as the bytes of gpsd's socket, is cut into lines by
/// the provider's `GPSDReportSplitter`, and each line is unpacked by the shim's report parser and turned into a
/// fix by `GPSDReportReader` (which `GPSDFix` converts), a SKY's satellites into a sky. Every input gets a fresh splitter and reader, so no state
/// leaks from one input to the next.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGPSDReports(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var splitter = GPSDReportSplitter()
    var reader = GPSDReportReader()
    let stream = Array(UnsafeBufferPointer(start: data, count: size)) + [UInt8(ascii: "\n")]
    for line in splitter.append(stream) {
        if let fix = reader.fix(from: line, receivedAt: WallTime(seconds: 1_700_000_000)) { checkFix(fix) }
        if let sky = reader.takeSky() { checkSky(sky) }
    }
    return 0
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzGPSDReports) }
    }
#endif
