import Foundation
import Glibc
import Testing
import WhereaboutsCore
import WhereaboutsStorage

/// The record of location use on disk, one file per user: new entries appended, a file written whole past the
/// margins, and each kind of bad file (garbage, oversized, a link, not a regular file, a torn last line) costing
/// its user alone, with a log line; a flood keeps the newest entries.
@Suite("The history store: a file per user")
struct HistoryStoreTests {
    static let now = WallTime(microseconds: 1_700_000_000_000_000)

    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("history-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func use(_ app: String, at time: WallTime = now) -> HistoryEntry {
        .use(AppUse(app: app, started: time, stopped: time, level: .city, approximate: true, providers: [.ip]))
    }

    static func store(_ folder: URL) -> HistoryStore {
        HistoryStore(besideGrantsAt: folder.appendingPathComponent("grants").path) { Issue.record("\($0)") }
    }

    /// Two users' files written, then one of them replaced by `bad`; the other user's record is read whole.
    static func withOneBadFile(_ bad: (String) throws -> Void) throws -> (book: HistoryBook, log: [String], URL) {
        let folder = try Self.folder()
        let store = Self.store(folder)
        var book = HistoryBook()
        book.record(Self.use("claimed:a"), user: 1000, now: Self.now)
        book.record(Self.use("claimed:b"), user: 1001, now: Self.now)
        store.save(book.takeWrites(now: Self.now))
        store.flush()
        try bad(folder.appendingPathComponent("history.d/1001").path)
        var log: [String] = []
        let read = store.load(now: Self.now) { log.append($0) }
        return (read, log, folder)
    }

    @Test func linesAreAppendedAndReadBackAndAFileIsOnlyItsUsers() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = Self.store(folder)
        var book = HistoryBook()
        book.record(Self.use("claimed:a"), user: 1000, now: Self.now)
        book.record(Self.use("claimed:b"), user: 1001, now: Self.now)
        store.save(book.takeWrites(now: Self.now))
        store.flush()
        let path = folder.appendingPathComponent("history.d/1000").path
        var before = stat()
        stat(path, &before)
        #expect(before.st_mode & 0o777 == 0o600)
        book.record(Self.use("claimed:c"), user: 1000, now: Self.now)
        store.save(book.takeWrites(now: Self.now))
        store.flush()
        // Appended: the same file grew, rather than a new one replacing it.
        var after = stat()
        stat(path, &after)
        #expect(after.st_ino == before.st_ino && after.st_size > before.st_size)
        let read = store.load(now: Self.now) { Issue.record("\($0)") }
        #expect(read.entries(ofUser: 1000, since: WallTime(microseconds: 0), now: Self.now).count == 2)
        #expect(read.keepingUsers == [1000, 1001] && read.count == 3)
    }

    @Test(arguments: ["garbage", "oversized", "symlink", "fifo", "folder"])
    func aBadFileIsMovedAsideAndCostsItsUserAlone(kind: String) throws {
        let (book, log, folder) = try Self.withOneBadFile { path in
            unlink(path)
            switch kind {
            case "garbage":
                try "# whereabouts history 1\nuse\tnot a time\n".write(toFile: path, atomically: true, encoding: .utf8)
            case "oversized":
                _ = FileManager.default.createFile(atPath: path, contents: nil)
                truncate(path, off_t(HistoryFile.fileSizeLimit + 1))
            case "symlink": symlink("/etc/passwd", path)
            case "fifo": mkfifo(path, 0o600)
            default: mkdir(path, 0o700)
            }
        }
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(book.keepingUsers == [1000], "\(log)")
        #expect(log.count == 1 && log[0].contains("history of user 1001") && log[0].contains("moved it to"), "\(log)")
        let folderNames = try FileManager.default.contentsOfDirectory(
            atPath: folder.appendingPathComponent("history.d").path)
        #expect(folderNames == ["1000"], "\(folderNames)")
        let beside = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(beside.contains { $0.hasPrefix("history-1001.corrupt-") }, "\(beside)")
    }

    @Test func aTornLastLineIsDroppedWithALogLineAndTheFileWrittenWhole() throws {
        var torn = ""
        let (loaded, log, folder) = try Self.withOneBadFile { path in
            let handle = try #require(FileHandle(forWritingAtPath: path))
            handle.seekToEndOfFile()
            handle.write(Data("use\t1700000000000000\t17000".utf8))
            handle.closeFile()
            torn = try String(contentsOfFile: path, encoding: .utf8)
        }
        defer { try? FileManager.default.removeItem(at: folder) }
        var book = loaded
        #expect(book.keepingUsers == [1000, 1001], "\(log)")
        #expect(log.count == 1 && log[0].contains("cut short") && log[0].contains("history of user 1001"), "\(log)")
        // The next writes put the file right: whole, without the torn line, so that appends follow whole lines.
        let writes = book.takeWrites(now: Self.now)
        #expect(writes.count == 1 && writes.first?.user == 1001, "\(writes)")
        let store = Self.store(folder)
        store.save(writes)
        store.flush()
        let path = folder.appendingPathComponent("history.d/1001").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text != torn && text.hasSuffix("\n") && !text.contains("\t17000\n"))
        #expect(store.load(now: Self.now) { Issue.record("\($0)") }.count == 2)
    }

    /// A flood past the bound keeps the newest 10,000 entries, on disk as in memory, and the file stays within what
    /// its reader accepts.
    @Test func aFloodKeepsTheNewestEntries() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = Self.store(folder)
        var book = HistoryBook()
        let total = HistoryBook.limitPerUser + 2 * HistoryBook.rewriteMargin + 17
        for index in 0..<total {
            let time = Self.now.advanced(by: .milliseconds(index))
            book.record(Self.use("claimed:app\(index)", at: time), user: 1000, now: time)
            if index % 500 == 0 { store.save(book.takeWrites(now: time)) }
        }
        let end = Self.now.advanced(by: .milliseconds(total))
        store.save(book.takeWrites(now: end))
        store.flush()
        let size =
            try FileManager.default.attributesOfItem(
                atPath: folder.appendingPathComponent("history.d/1000").path)[.size] as? Int ?? 0
        #expect(size <= HistoryFile.fileSizeLimit)
        let read = store.load(now: end) { Issue.record("\($0)") }
        let entries = read.entries(ofUser: 1000, since: WallTime(microseconds: 0), now: end)
        #expect(entries.count == HistoryBook.limitPerUser)
        #expect(
            entries.first
                == Self.use(
                    "claimed:app\(total - HistoryBook.limitPerUser)",
                    at: Self.now.advanced(by: .milliseconds(total - HistoryBook.limitPerUser))))
        #expect(
            entries.last == Self.use("claimed:app\(total - 1)", at: Self.now.advanced(by: .milliseconds(total - 1))))
    }
}
