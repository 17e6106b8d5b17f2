import WhereaboutsCore

/// The Wi-Fi position cache and the places learned on the machine (``PositionCache``), kept in a ``CacheFile``
/// named `positions`.
public typealias PositionCacheFile = CacheFile<PositionCache>

extension PositionCache: StoredCache {
    /// `positions`.
    public static let fileName = "positions"
    /// The cache's capacity at its longest lines, with room.
    public static let fileSizeLimit = 8 << 20
}
