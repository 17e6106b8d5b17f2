import WhereaboutsCore

#if canImport(Glibc)
    import Glibc
#endif

/// The static location set through `io.github.whereabouts1.Manager.SetStaticLocation`, kept in a ``DurableFile``
/// beside the grants, in the static location file's format.
///
/// While it exists it takes the place of `[static-source]`'s file. A file that cannot be parsed is moved aside with
/// a log line, and the configured source serves again.
public struct StaticLocationOverrideFile: Sendable {
    public let file: DurableFile

    /// The file that goes with the grants file `grantsPath`: `static-location` in the same folder.
    public init(besideGrantsAt grantsPath: String) {
        file = DurableFile(named: "static-location", besideFileAt: grantsPath)
    }

    /// The location set, or nil when none is; `log` receives a line when the file was corrupt or unreadable.
    public func load(now: WallTime, log: (String) -> Void) -> StaticLocation? {
        let bytes: [UInt8]
        do {
            guard let read = try file.read(limit: 4096) else { return nil }
            bytes = read
        } catch {
            log("static location: cannot read: \(error); using the configured static source")
            return nil
        }
        do {
            return try StaticLocationFile.parse(String(decoding: bytes, as: UTF8.self), file: file.path)
        } catch {
            let aside = (try? file.moveAside(now: now)) ?? "(could not be moved)"
            log("static location: \(error); moved it to \(aside); using the configured static source")
            return nil
        }
    }

    /// Keeps `location` durably.
    public func save(_ location: StaticLocation) throws(DurableFile.Failure) { try file.write(location.fileText) }

    /// Forgets the location set; a file that is already gone is no error.
    public func remove() throws(DurableFile.Failure) {
        guard unlink(file.path) == 0 || errno == ENOENT else {
            throw DurableFile.Failure(operation: "unlink", path: file.path, code: errno)
        }
    }
}
