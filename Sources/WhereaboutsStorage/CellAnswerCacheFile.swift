import WhereaboutsCore

/// The positioning service's answers for serving cells (``CellAnswerCache``), kept in a ``DurableFile`` named
/// `cells` next to the grants, readable by the service's user only. Nothing in it leaves the machine.
///
/// A file that cannot be read or parsed is moved aside and the cache starts empty: that costs lookups, never a
/// wrong position.
public struct CellAnswerCacheFile: Sendable {
    /// The largest file read: the cache's capacity at its longest lines, with room. A line of eight NR cells with
    /// the longest numbers and 24-character coordinates is under 400 bytes; 512 of them are under 200 KiB.
    public static let sizeLimit = 1 << 20

    /// The file the cache is kept in.
    public let file: DurableFile
    private let writer: BackgroundWriter<CellAnswerCache>

    /// The file that goes with the grants file `grantsPath`; a failed save is told to `saveFailed`, on the
    /// writer's thread.
    public init(besideGrantsAt grantsPath: String, saveFailed: @escaping @Sendable (String) -> Void) {
        let file = DurableFile(named: "cells", besideFileAt: grantsPath)
        self.file = file
        writer = BackgroundWriter(
            write: { cache in try file.write(cache.serialized()) },
            finished: { _, failure in
                if let failure { saveFailed(failure) }
            })
    }

    /// The saved cache, without the entries past their age; `log` receives a line when the file was corrupt or
    /// unreadable.
    public func load(now: WallTime, log: (String) -> Void) -> CellAnswerCache {
        file.load(
            limit: Self.sizeLimit, now: now, label: "cell answer cache", fallback: "starting with an empty cache",
            missing: CellAnswerCache(), unusable: CellAnswerCache(), log: log
        ) { text in
            Result { () throws(CellAnswerCacheFormatError) in try CellAnswerCache.parse(text, now: now) }
                .mapError { DurableFile.LoadProblem("\(file.path): \($0)") }
        }
    }

    /// Waits until the caches handed over are written, for a process about to end (``BackgroundWriter/flush(timeout:)``).
    public func flush() { writer.flush() }

    /// Hands `cache` to the writer thread, which serialises it and saves it durably; returns at once. Caches handed
    /// over while one is being written are coalesced into the next write.
    public func save(_ cache: CellAnswerCache) { writer.submit(cache) }
}
