import WhereaboutsCore

/// The positioning service's answers for serving cells (``CellAnswerCache``), kept in a ``CacheFile`` named `cells`.
public typealias CellAnswerCacheFile = CacheFile<CellAnswerCache>

extension CellAnswerCache: StoredCache {
    /// `cells`.
    public static let fileName = "cells"
    /// A line of eight NR cells with the longest numbers and 24-character coordinates is under 400 bytes; 512 of
    /// them are under 200 KiB.
    public static let fileSizeLimit = 1 << 20
}
