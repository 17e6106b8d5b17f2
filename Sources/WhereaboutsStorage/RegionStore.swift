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
public struct RegionStore: FailedWriteReporting {
    /// The largest user's file read: a user at ``Region/limitPerUser`` regions and
    /// ``RegionMonitor/pendingLimitPerUser`` events, every id at its longest and escaped, is about 4.5 MiB.
    public static let fileSizeLimit = 8 << 20
    /// The largest file of the earlier one-file store read.
    public static let earlierFileSizeLimit = 32 << 20

    /// The folder of the users' files.
    public let folder: String
    private let earlier: DurableFile
    private let writer: BackgroundWriter<[UInt32: RegionUserRecords]>
    /// The users whose last write failed, until ``takeFailedUsers()``, and who is told of them
    /// (``whenWritesFail(_:)``).
    private let failed = FailedWrites()

    /// The store that goes with the grants file `grantsPath`; a failed save is told to `saveFailed`, on the
    /// writer's thread, and its user kept for ``takeFailedUsers()``.
    public init(besideGrantsAt grantsPath: String, saveFailed: @escaping @Sendable (String) -> Void) {
        let folder = DurableFile(named: "regions.d", besideFileAt: grantsPath).path
        self.folder = folder
        earlier = DurableFile(named: "regions", besideFileAt: grantsPath)
        let failed = self.failed
        writer = BackgroundWriter(
            write: { users in
                for records in users.values.sorted(by: { $0.user < $1.user }) {
                    do {
                        try RegionStore.write(records, in: folder)
                    } catch {
                        saveFailed("\(error)")
                        failed.failed(records.user)
                    }
                }
            },
            combine: { waiting, newer in waiting.merging(newer) { $1 } })
    }

    /// The file of `user` in `folder`; one that cannot be read is moved out of the folder, beside it, as
    /// `regions-UID.corrupt-SECONDS`, so that the folder holds only users' files.
    private static func file(of user: UInt32, in folder: String) -> DurableFile {
        let parent = folder.lastIndex(of: "/").map { String(folder[...$0]) } ?? ""
        return DurableFile(path: "\(folder)/\(user)", aside: "\(parent)regions-\(user)")
    }

    /// The saved regions, without those expired; `log` receives a line for each file that was corrupt or
    /// unreadable (moved aside, its user's regions not watched), for what was left out past the limits, and for the
    /// earlier one-file store moved into the users' files.
    ///
    /// The users whose file does not hold what they now keep (regions expired or left out, or nothing left at all)
    /// come back noted as changed (``RegionMonitor/changedUsers``), so that the first save writes or removes their
    /// files: the folder is then empty exactly when nothing is kept. A temporary file a crash left is removed.
    public func load(now: WallTime, log: (String) -> Void) -> RegionMonitor {
        var monitor = RegionMonitor()
        var texts: [UInt32: String] = [:]
        for user in UserFiles.users(in: folder) {
            let file = Self.file(of: user, in: folder)
            let kept = file.load(
                limit: Self.fileSizeLimit, now: now, label: "regions of user \(user)",
                fallback: "watching none of that user's regions", missing: RegionMonitor(), unusable: RegionMonitor(),
                log: log
            ) { text in
                texts[user] = text
                return Result { () throws(RegionFileError) in
                    try RegionFile.parse(text, now: now, file: file.path, user: user)
                }
                .mapError { DurableFile.LoadProblem("\($0)") }
            }
            let leftOut = monitor.adopt(kept)
            if leftOut.regions + leftOut.events > 0 {
                log(
                    "regions of user \(user): \(leftOut.regions) region(s) and \(leftOut.events) pending event(s) left "
                        + "out, past the limits")
            }
        }
        let unwritten = moveEarlierStore(into: &monitor, now: now, log: log)
        _ = monitor.takeChangedUsers()
        monitor.noteChanged(
            texts.filter { user, text in RegionFile.serialize(monitor.records(ofUser: user)) != text }.keys)
        monitor.noteChanged(unwritten)
        return monitor
    }

    /// Hands the users' `records` to the writer thread, which writes each user's file durably (or removes it when
    /// the user keeps nothing); returns at once.
    public func save(_ records: [RegionUserRecords]) {
        guard !records.isEmpty else { return }
        writer.submit(Dictionary(records.map { ($0.user, $0) }) { $1 })
    }

    /// The users whose file could not be written since the last call (a full or failing disk); they are forgotten,
    /// and are to be saved again.
    public func takeFailedUsers() -> Set<UInt32> { failed.take() }

    /// Has `action` called on the writer's thread when a user's file could not be written and no failed user was
    /// waiting to be taken; a later call replaces the action.
    public func whenWritesFail(_ action: @escaping @Sendable () -> Void) { failed.whenWritesFail(action) }

    /// Waits until the regions handed over are written, for a process about to end.
    public func flush() { writer.flush() }

    /// Reads the earlier versions' one file, takes in what it holds and writes the users' files. The old file is
    /// then removed, or, when a user's file could not be written, moved aside as `regions.migrated-SECONDS`: it is
    /// never taken in twice (which would bring back regions removed since, and repeat pending events). Returns the
    /// users whose file is still to be written.
    private func moveEarlierStore(into monitor: inout RegionMonitor, now: WallTime, log: (String) -> Void)
        -> Set<UInt32>
    {
        let old: RegionMonitor? = earlier.load(
            limit: Self.earlierFileSizeLimit, now: now, label: "regions", fallback: "watching none of its regions",
            missing: nil, unusable: nil, log: log
        ) { text in
            Result { () throws(RegionFileError) in try RegionFile.parse(text, now: now, file: earlier.path) }
                .map(Optional.some).mapError { DurableFile.LoadProblem("\($0)") }
        }
        guard let old else { return [] }
        let leftOut = monitor.adopt(old)
        var unwritten: Set<UInt32> = []
        for user in old.keepingUsers {
            do {
                try Self.write(monitor.records(ofUser: user), in: folder)
            } catch {
                log("regions of user \(user): cannot write: \(error); written again at the next save")
                unwritten.insert(user)
            }
        }
        let done: String
        if unwritten.isEmpty {
            do {
                try earlier.remove()
            } catch {
                log("regions: cannot remove \(earlier.path) once read: \(error)")
                return unwritten
            }
            done = "removed"
        } else {
            let aside = "\(earlier.path).migrated-\(now.seconds)"
            guard rename(earlier.path, aside) == 0 else {
                log("regions: cannot move \(earlier.path) aside once read: \(String(cString: strerror(errno)))")
                return unwritten
            }
            done = "moved to \(aside)"
        }
        log(
            "regions: moved \(old.count - leftOut.regions) region(s) of \(old.keepingUsers.count) user(s) from "
                + "\(earlier.path) into \(folder) (\(done))"
                + (leftOut.regions > 0 ? ", \(leftOut.regions) left out past the limits" : ""))
        return unwritten
    }

    /// Writes `records` to its user's file in `folder` (made when missing), or removes the file, durably, when the
    /// user keeps nothing.
    private static func write(_ records: RegionUserRecords, in folder: String) throws(DurableFile.Failure) {
        let file = file(of: records.user, in: folder)
        if records.isEmpty {
            try file.remove()
            return
        }
        guard mkdir(folder, 0o700) == 0 || errno == EEXIST else {
            throw DurableFile.Failure(operation: "make the folder", path: folder, code: errno)
        }
        try file.write(RegionFile.serialize(records))
    }
}
