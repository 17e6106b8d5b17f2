import FuzzSupport
import WhereaboutsCore
import WhereaboutsProviders

/// A recorded track as the replay source reads it: GPX (or NMEA) text parsed into a track, then scheduled for
/// playback, and a few of its fixes placed in time.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGPX(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = String(validating: UnsafeBufferPointer(start: data, count: size), as: UTF8.self) else { return 0 }
    if let document = try? GPXDocument(parsing: text) {
        for point in document.waypoints + document.routePoints + document.trackPoints {
            precondition(abs(point.latitude) <= 90 && abs(point.longitude) <= 180, "GPX point out of range")
        }
    }
    guard let track = try? Track.parse(text: text, fileName: "fuzz.gpx") else { return 0 }
    for fix in track.fixes { checkFix(fix) }
    guard let schedule = try? ReplaySchedule(track: track, speed: 2) else { return 0 }
    let start = WallTime(seconds: 1_700_000_000)
    for index in [0, track.fixes.count / 2, track.fixes.count - 1] {
        checkFix(schedule.fix(at: index, loop: 3, startedAt: start))
    }
    let due = schedule.latestDue(at: .seconds(3600))
    precondition(track.fixes.indices.contains(due.index), "latestDue returned an index outside the track")
    return 0
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzGPX) }
    }
#endif
