import WhereaboutsCore

/// The predicted-orbit files downloaded for the modems' receivers (``PredictedOrbitCache``), kept in a
/// ``CacheFile`` named `predicted-orbits`.
public typealias PredictedOrbitCacheFile = CacheFile<PredictedOrbitCache>

extension PredictedOrbitCache: StoredCache {
    /// `predicted-orbits`.
    public static let fileName = "predicted-orbits"
    /// Four files of at most 1 MiB, in base64, with their URLs.
    public static let fileSizeLimit = 6 << 20
}
