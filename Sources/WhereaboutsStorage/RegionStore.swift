import WhereaboutsCore

#if canImport(Glibc)
    import Glibc
#endif

/// The regions the apps watch and their pending events (``RegionMonitor``), one ``DurableFile`` per user in the
/// folder `regions.d` next to the grants, each named by the user's id and readable by the service's user only.
/// Nothing in them leaves the machine.
///
/// One user's change rewrites that user's file alone, on a thread of its own, the changes handed over meanwhile
/// written together; a user who keeps nothing has no file, so the folder is empty exactly when no region and no
/// pending event is kept (the package starts the service at boot when it is not). A file that cannot be read or
/// parsed is moved aside and costs its user's regions only: the app sees them gone from `ListRegions` and adds
/// them again, rather than being told of a place it never was. The one file `regions` of earlier versions is read
/// once, written into the users' files and removed.
public struct RegionStore: Sendable {
    /// The largest user's file read: a user at ``Region/limitPerUser`` regions and
    /// ``RegionMonitor/pendingLimitPerUser`` events, every id at its longest and escaped, is about 4.5 MiB.
    public static let fileSizeLimit = 8 << 20
    /// The largest file of the earlier one-file store read.
    public static let earlierFileSizeLimit = 32 << 20

    /// The folder of the users' files.
    public let folder: String
    private let earlier: DurableFile
    private let writer: BackgroundWriter<[UInt32: RegionUserRecords]>

    /// The store that goes with the grants file `grantsPath`; a failed save is told to `saveFailed`, on the
    /// writer's thread.
    public init(besideGrantsAt grantsPath: String, saveFailed: @escaping @Sendable (String) -> Void) {
        let folder = DurableFile(named: "regions.d", besideFileAt: grantsPath).path
        self.folder = folder
        earlier = DurableFile(named: "regions", besideFileAt: grantsPath)
        writer = BackgroundWriter(
            write: { users in
                for records in users.values.sorted(by: { $0.user < $1.user }) {
                    do {
                        try RegionStore.write(records, in: folder)
                    } catch {
                        saveFailed("\(error)")
                    }
                }
            },
            combine: { waiting, newer in waiting.merging(newer) { $1 } })
    }

    /// The file of `user`.
    public func file(of user: UInt32) -> DurableFile { DurableFile(path: "\(folder)/\(user)") }

    /// The saved regions, without those expired; `log` receives a line for each file that was corrupt or
    /// unreadable (moved aside, its user's regions not watched), for what was left out past the limits, and for the
    /// earlier one-file store moved into the users' files.
    public func load(now: WallTime, log: (String) -> Void) -> RegionMonitor {
        var monitor = RegionMonitor()
        for user in Self.users(in: folder) {
            let file = file(of: user)
            let kept = file.load(
                limit: Self.fileSizeLimit, now: now, label: "regions of user \(user)",
                fallback: "watching none of that user's regions", missing: RegionMonitor(), unusable: RegionMonitor(),
                log: log
            ) { text in
                Result { () throws(RegionFileError) in try RegionFile.parse(text, now: now, file: file.path, user: user)
                }
                .mapError { DurableFile.LoadProblem("\($0)") }
            }
            let leftOut = monitor.adopt(kept)
            if leftOut > 0 { log("regions of user \(user): \(leftOut) left out, past the limits") }
        }
        moveEarlierStore(into: &monitor, now: now, log: log)
        _ = monitor.takeChangedUsers()
        return monitor
    }

    /// Hands the users' `records` to the writer thread, which writes each user's file durably (or removes it when
    /// the user keeps nothing); returns at once.
    public func save(_ records: [RegionUserRecords]) {
        guard !records.isEmpty else { return }
        writer.submit(Dictionary(records.map { ($0.user, $0) }) { $1 })
    }

    /// Waits until the regions handed over are written, for a process about to end.
    public func flush() { writer.flush() }

    /// Reads the earlier versions' one file, takes in what it holds, writes the users' files and removes it.
    private func moveEarlierStore(into monitor: inout RegionMonitor, now: WallTime, log: (String) -> Void) {
        let old: RegionMonitor? = earlier.load(
            limit: Self.earlierFileSizeLimit, now: now, label: "regions", fallback: "watching none of its regions",
            missing: nil, unusable: nil, log: log
        ) { text in
            Result { () throws(RegionFileError) in try RegionFile.parse(text, now: now, file: earlier.path) }
                .map(Optional.some).mapError { DurableFile.LoadProblem("\($0)") }
        }
        guard let old else { return }
        let leftOut = monitor.adopt(old)
        do {
            for user in old.keepingUsers { try Self.write(monitor.records(ofUser: user), in: folder) }
            unlink(earlier.path)
            log(
                "regions: moved \(old.count - leftOut) region(s) of \(old.keepingUsers.count) user(s) from "
                    + "\(earlier.path) into \(folder)" + (leftOut > 0 ? ", \(leftOut) left out past the limits" : ""))
        } catch {
            log("regions: cannot move \(earlier.path) into \(folder): \(error); it is read again at the next start")
        }
    }

    /// Writes `records` to its user's file in `folder` (made when missing), or removes the file when the user keeps
    /// nothing.
    private static func write(_ records: RegionUserRecords, in folder: String) throws(DurableFile.Failure) {
        let path = "\(folder)/\(records.user)"
        if records.isEmpty {
            guard unlink(path) == 0 || errno == ENOENT else {
                throw DurableFile.Failure(operation: "remove", path: path, code: errno)
            }
            return
        }
        guard mkdir(folder, 0o700) == 0 || errno == EEXIST else {
            throw DurableFile.Failure(operation: "make the folder", path: folder, code: errno)
        }
        try DurableFile(path: path).write(RegionFile.serialize(records))
    }

    /// The users whose files are in `folder`, sorted: names that are a user id; anything else there (a file
    /// moved aside, a temporary file) is not read.
    private static func users(in folder: String) -> [UInt32] {
        guard let directory = opendir(folder) else { return [] }
        defer { closedir(directory) }
        var users: [UInt32] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard !name.isEmpty, name.utf8.allSatisfy({ (48...57).contains($0) }), name.count <= 10,
                name == "0" || !name.hasPrefix("0"), let user = UInt32(name)
            else { continue }
            users.append(user)
        }
        return users.sorted()
    }
}
