import WhereaboutsCore

/// The location services switch (`io.github.whereabouts1.Manager.LocationServicesEnabled`), kept in a
/// ``DurableFile`` next to the grants so that it survives restarts.
///
/// The file holds one line, `enabled=true` or `enabled=false`; no file means on. A file that cannot be read, that
/// says anything else, or that is not a regular file (a symbolic link, dangling or not, a FIFO, a directory) is
/// moved aside (when it can be) and the switch fails closed: location services stay off until an administrator
/// switches them on again.
public struct ServicesSwitchFile: Sendable {
    public let file: DurableFile

    /// The file that goes with the grants file `grantsPath`: `services` in the same folder.
    public init(besideGrantsAt grantsPath: String) { file = DurableFile(named: "services", besideFileAt: grantsPath) }

    /// Whether location services are on; `log` receives a line when the file was corrupt or unreadable.
    public func load(now: WallTime, log: (String) -> Void) -> Bool {
        file.load(
            limit: 4096, now: now, label: "location services switch", fallback: "location services stay off",
            missing: true, unusable: false, log: log
        ) { text in
            let words = text.split(whereSeparator: \.isWhitespace)
            switch words.count == 1 ? words[0] : "" {
            case "enabled=true": return .success(true)
            case "enabled=false": return .success(false)
            default: return .failure(DurableFile.LoadProblem("\(file.path) is neither enabled=true nor enabled=false"))
            }
        }
    }

    /// Saves the switch durably.
    public func save(enabled: Bool) throws(DurableFile.Failure) { try file.write("enabled=\(enabled)\n") }
}
