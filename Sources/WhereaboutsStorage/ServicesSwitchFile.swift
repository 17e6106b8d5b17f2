import WhereaboutsCore

/// The location services switch (`io.github.whereabouts1.Manager.LocationServicesEnabled`), kept in a
/// ``DurableFile`` next to the grants so that it survives restarts.
///
/// The file holds one line, `enabled=true` or `enabled=false`; no file means on. A file that cannot be read or
/// says anything else is moved aside (when it can be) and the switch fails closed: location services stay off
/// until an administrator switches them on again.
public struct ServicesSwitchFile: Sendable {
    public let file: DurableFile

    /// The file that goes with the grants file `grantsPath`: `services` in the same folder.
    public init(besideGrantsAt grantsPath: String) { file = DurableFile(named: "services", besideFileAt: grantsPath) }

    /// Whether location services are on; `log` receives a line when the file was corrupt or unreadable.
    public func load(now: WallTime, log: (String) -> Void) -> Bool {
        let bytes: [UInt8]
        do {
            guard let read = try file.read(limit: 4096) else { return true }
            bytes = read
        } catch {
            log("location services switch: cannot read: \(error); location services stay off")
            return false
        }
        let words = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        switch words.count == 1 ? words[0] : "" {
        case "enabled=true": return true
        case "enabled=false": return false
        default:
            let aside = (try? file.moveAside(now: now)) ?? "(could not be moved)"
            log("location services switch: \(file.path) is neither enabled=true nor enabled=false; moved it to \(aside); location services stay off")
            return false
        }
    }

    /// Saves the switch durably.
    public func save(enabled: Bool) throws(DurableFile.Failure) { try file.write("enabled=\(enabled)\n") }
}
