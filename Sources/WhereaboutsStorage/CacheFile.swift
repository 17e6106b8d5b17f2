import Glibc
import WhereaboutsCore

/// A cache of the service's (``PositionCache``, ``CellAnswerCache``) kept in a ``DurableFile`` next to the grants,
/// readable by the service's user only. Nothing in it leaves the machine.
///
/// A file that cannot be read or parsed is moved aside and the cache starts empty: that costs lookups, never a
/// wrong position.
public struct CacheFile<Cache: StoredCache>: Sendable {
    /// The largest file read (``StoredCache/fileSizeLimit``).
    public static var sizeLimit: Int { Cache.fileSizeLimit }

    /// The file the cache is kept in.
    public let file: DurableFile
    private let writer: BackgroundWriter<Cache>

    /// The file that goes with the grants file `grantsPath`; a failed save is told to `saveFailed`, on the
    /// writer's thread. A cache whose text is larger than ``sizeLimit`` is not written (`EFBIG`): the file is never
    /// one its reader refuses.
    public init(besideGrantsAt grantsPath: String, saveFailed: @escaping @Sendable (String) -> Void) {
        let file = DurableFile(named: Cache.fileName, besideFileAt: grantsPath)
        self.file = file
        writer = BackgroundWriter(
            write: { cache in
                let text = cache.serialized()
                guard text.utf8.count <= Self.sizeLimit else {
                    throw DurableFile.Failure(operation: "write", path: file.path, code: EFBIG)
                }
                try file.write(text)
            },
            finished: { _, failure in
                if let failure { saveFailed(failure) }
            })
    }

    /// The saved cache, without the entries past their age; `log` receives a line when the file was corrupt or
    /// unreadable.
    public func load(now: WallTime, log: (String) -> Void) -> Cache {
        let empty = Cache(capacity: Cache.defaultCapacity)
        return file.load(
            limit: Self.sizeLimit, now: now, label: Cache.fileKind, fallback: "starting with an empty cache",
            missing: empty, unusable: empty, log: log
        ) { text in
            Result { () throws(Cache.FormatError) in try Cache.parse(text, now: now, capacity: Cache.defaultCapacity) }
                .mapError { DurableFile.LoadProblem("\(file.path): \($0)") }
        }
    }

    /// Waits until the caches handed over are written, for a process about to end (``BackgroundWriter/flush(timeout:)``).
    public func flush() { writer.flush() }

    /// Hands `cache` to the writer thread, which serialises it and saves it durably; returns at once. Caches handed
    /// over while one is being written are coalesced into the next write.
    public func save(_ cache: Cache) { writer.submit(cache) }
}

/// A cache kept in a ``CacheFile``: the file's name beside the grants, and the largest file read.
public protocol StoredCache: TextCache {
    /// The file's name, in the folder of the grants file.
    static var fileName: String { get }
    /// The largest file read: the cache's capacity at its longest lines, with room.
    static var fileSizeLimit: Int { get }
}
