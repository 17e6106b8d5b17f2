import Foundation
import Synchronization
import Testing
import WhereaboutsCore
import WhereaboutsStorage

/// A cache file is never written larger than its reader accepts: the predicted-orbit cache at its largest fits its
/// limit, and a cache whose text would not is not written at all.
@Suite("Cache files: never larger than their reader accepts")
struct CacheFileSizeTests {
    static let now = WallTime(microseconds: 1_790_000_000_000_000)

    /// A folder holding a grants path, removed afterwards by the caller.
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cache-size-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func thePredictedOrbitCacheAtItsLargestIsWrittenAndReadBack() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var cache = PredictedOrbitCache(capacity: PredictedOrbitCache.defaultCapacity)
        for index in 0..<PredictedOrbitCache.defaultCapacity {
            let servers = (0..<PredictedOrbitCache.maximumServers).map { server in
                let prefix = "https://\(index).\(server).example/"
                return prefix + String(repeating: "x", count: PredictedOrbitCache.maximumURLLength - prefix.utf8.count)
            }
            cache.store(
                PredictedOrbitFile(
                    servers: servers, source: servers[0], downloaded: Self.now,
                    expires: Self.now.advanced(by: PredictedOrbitValidity.maximumValidity),
                    data: [UInt8](repeating: 0xA5, count: PredictedOrbitFile.maximumSize)),
                now: Self.now)
        }
        #expect(cache.files.count == PredictedOrbitCache.defaultCapacity)
        #expect(cache.serialized().utf8.count <= PredictedOrbitCacheFile.sizeLimit)
        let failures = Mutex<[String]>([])
        let file = PredictedOrbitCacheFile(besideGrantsAt: folder.appendingPathComponent("grants").path) { failure in
            failures.withLock { $0.append(failure) }
        }
        file.save(cache)
        file.flush()
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(file.load(now: Self.now) { Issue.record("\($0)") } == cache)
    }

    @Test func aCacheLargerThanItsLimitIsNotWritten() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let failures = Mutex<[String]>([])
        let file = CacheFile<OversizedCache>(besideGrantsAt: folder.appendingPathComponent("grants").path) {
            failure in failures.withLock { $0.append(failure) }
        }
        file.save(OversizedCache(capacity: 1))
        file.flush()
        #expect(failures.withLock { $0 }.count == 1)
        #expect(failures.withLock { $0 }.first?.contains("File too large") == true, "\(failures.withLock { $0 })")
        #expect(!FileManager.default.fileExists(atPath: file.file.path))
    }
}

/// A cache whose text is always longer than the file its reader accepts.
struct OversizedCache: StoredCache {
    struct FormatError: Error {}
    static let fileKind = "oversized cache"
    static let defaultCapacity = 1
    static let fileName = "oversized"
    static let fileSizeLimit = 16

    init(capacity: Int) {}
    func serialized() -> String { String(repeating: "x", count: Self.fileSizeLimit + 1) }
    static func parse(_ text: String, now: WallTime, capacity: Int) throws(FormatError) -> OversizedCache {
        OversizedCache(capacity: capacity)
    }
}
