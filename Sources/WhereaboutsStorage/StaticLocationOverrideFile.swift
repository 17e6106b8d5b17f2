import WhereaboutsCore

#if canImport(Glibc)
    import Glibc
#endif

/// The static location set through `io.github.whereabouts1.Manager.SetStaticLocation`, kept in a ``DurableFile``
/// beside the grants, in the static location file's format.
///
/// While it exists it takes the place of `[static-source]`'s file. A file that cannot be parsed, or that is not a
/// regular file (a symbolic link is not followed), is moved aside with a log line, and the configured source serves
/// again.
public struct StaticLocationOverrideFile: Sendable {
    public let file: DurableFile

    /// The file that goes with the grants file `grantsPath`: `static-location` in the same folder.
    public init(besideGrantsAt grantsPath: String) {
        file = DurableFile(named: "static-location", besideFileAt: grantsPath)
    }

    /// The location set, or nil when none is; `log` receives a line when the file was corrupt or unreadable.
    public func load(now: WallTime, log: (String) -> Void) -> StaticLocation? {
        file.load(
            limit: 4096, now: now, label: "static location", fallback: "using the configured static source",
            missing: nil, unusable: nil, log: log
        ) { text in
            Result { () throws(StaticLocationError) in try StaticLocationFile.parse(text, file: file.path) }
                .map { Optional($0) }.mapError { DurableFile.LoadProblem($0.description) }
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
