import FuzzSupport
import WhereaboutsCore

/// The daemon's configuration file (geoclue.conf's key-file format): parsed as a key file, every value read
/// through each typed accessor, then as a whole configuration.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfiguration(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = String(validating: UnsafeBufferPointer(start: data, count: size), as: UTF8.self) else { return 0 }
    if let keyFile = try? KeyFile(parsing: text, file: "fuzz.conf") {
        for group in keyFile.groups {
            for entry in group.entries {
                _ = try? keyFile.string(entry.key, in: group.name)
                _ = try? keyFile.stringList(entry.key, in: group.name)
                _ = try? keyFile.bool(entry.key, in: group.name)
                _ = try? keyFile.integer(entry.key, in: group.name, as: UInt16.self)
                _ = try? keyFile.integerList(entry.key, in: group.name, as: UInt32.self)
                _ = try? keyFile.double(entry.key, in: group.name)
            }
        }
    }
    if let configuration = try? Configuration.parse(text, file: "fuzz.conf") {
        for (desktopId, _) in configuration.apps {
            _ = configuration.permission(for: desktopId, uid: 1000)
        }
    }
    return 0
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzConfiguration) }
    }
#endif
