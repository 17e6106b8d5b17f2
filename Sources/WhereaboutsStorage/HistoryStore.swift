import WhereaboutsCore

#if canImport(Glibc)
    import Glibc
#endif

/// The users' histories of location use (``HistoryBook``), one file per user in the folder `history.d` next to
/// the grants, each named by the user's id and readable by the service's user only. Nothing in them leaves the
/// machine.
///
/// What ``HistoryBook/takeWrites(now:)`` says is done on a thread of its own, the writes handed over meanwhile
/// done together: new lines appended to a user's file (then flushed to disk), or the file replaced whole,
/// atomically, or removed. A file that cannot be read or parsed is moved aside and costs its user's history only; a
/// last line a crash cut short is dropped, with a log line, and the file written whole at the next write.
public struct HistoryStore: FailedWriteReporting {
    /// The folder of the users' files.
    public let folder: String
    private let writer: BackgroundWriter<[UInt32: HistoryWrite]>
    /// The users whose last write failed, until ``takeFailedUsers()``, and who is told of them
    /// (``whenWritesFail(_:)``).
    private let failed = FailedWrites()

    /// The store that goes with the grants file `grantsPath`; a failed write is told to `saveFailed`, on the
    /// writer's thread, and its user kept for ``takeFailedUsers()``.
    public init(besideGrantsAt grantsPath: String, saveFailed: @escaping @Sendable (String) -> Void) {
        let folder = DurableFile(named: "history.d", besideFileAt: grantsPath).path
        self.folder = folder
        let failed = self.failed
        writer = BackgroundWriter(
            write: { writes in
                for (user, write) in writes.sorted(by: { $0.key < $1.key }) {
                    do {
                        try HistoryStore.perform(write, in: folder)
                    } catch {
                        saveFailed("\(error)")
                        failed.failed(user)
                    }
                }
            },
            combine: { waiting, newer in waiting.merging(newer) { HistoryStore.combine($0, then: $1) } })
    }

    /// The saved histories, without what expired at `now`; `log` receives a line for each file that was corrupt
    /// or unreadable (moved aside, its user's history lost), for a torn last line dropped and for entries left out
    /// past the bounds. A temporary file a crash left is removed.
    public func load(now: WallTime, log: (String) -> Void) -> HistoryBook {
        var book = HistoryBook()
        for user in UserFiles.users(in: folder) {
            let file = Self.file(of: user, in: folder)
            let content = file.load(
                limit: HistoryFile.fileSizeLimit, now: now, label: "history of user \(user)",
                fallback: "that user's history starts afresh", missing: nil, unusable: nil, log: log
            ) { text in
                Result { () throws(HistoryFileError) in try HistoryFile.parse(text, now: now, file: file.path) }
                    .map(Optional.some).mapError { DurableFile.LoadProblem("\($0)") }
            }
            guard let content else { continue }
            if content.tornLine {
                log("history of user \(user): \(file.path): the last line was cut short (a crash?); dropped it")
            }
            let leftOut = book.adopt(content, ofUser: user, now: now)
            if leftOut > 0 { log("history of user \(user): \(leftOut) entries left out, past the bounds") }
        }
        return book
    }

    /// Hands `writes` to the writer thread; returns at once.
    public func save(_ writes: [HistoryWrite]) {
        guard !writes.isEmpty else { return }
        writer.submit(Dictionary(writes.map { ($0.user, $0) }) { Self.combine($0, then: $1) })
    }

    /// The users whose file could not be written since the last call; they are forgotten, and their files are to be
    /// written whole (``HistoryBook/writeFailed(ofUser:)``).
    public func takeFailedUsers() -> Set<UInt32> { failed.take() }

    /// Has `action` called on the writer's thread when a user's file could not be written and no failed user was
    /// waiting to be taken; a later call replaces the action.
    public func whenWritesFail(_ action: @escaping @Sendable () -> Void) { failed.whenWritesFail(action) }

    /// Waits until the writes handed over are done, for a process about to end.
    public func flush() { writer.flush() }

    /// One write that does what `waiting` and then `newer` do.
    private static func combine(_ waiting: HistoryWrite, then newer: HistoryWrite) -> HistoryWrite {
        switch (waiting, newer) {
        case (.append(let user, let earlier), .append(_, let later)): .append(user: user, lines: earlier + later)
        case (.rewrite(let user, let text), .append(_, let later)): .rewrite(user: user, text: text + later)
        case (.remove(let user), .append(_, let later)):
            .rewrite(user: user, text: HistoryFile.serialize([]) + later)
        default: newer
        }
    }

    /// The file of `user` in `folder`; one that cannot be read is moved out of the folder, beside it, as
    /// `history-UID.corrupt-SECONDS`, so that the folder holds only users' files.
    private static func file(of user: UInt32, in folder: String) -> DurableFile {
        let parent = folder.lastIndex(of: "/").map { String(folder[...$0]) } ?? ""
        return DurableFile(path: "\(folder)/\(user)", aside: "\(parent)history-\(user)")
    }

    private static func perform(_ write: HistoryWrite, in folder: String) throws(DurableFile.Failure) {
        let file = file(of: write.user, in: folder)
        switch write {
        case .remove: try file.remove()
        case .rewrite(_, let text):
            guard mkdir(folder, 0o700) == 0 || errno == EEXIST else {
                throw DurableFile.Failure(operation: "make the folder", path: folder, code: errno)
            }
            try file.write(text)
        case .append(_, let lines): try file.append(lines)
        }
    }
}
