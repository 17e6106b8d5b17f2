import DBus
import Loop

/// Runs `body` for every path, at most `width` calls at a time (a stock system bus lets one connection wait for
/// 128 replies at once), and returns the answers that are not nil, in the order of `paths`.
@BusActor
func concurrently<T: Sendable>(
    _ paths: [ObjectPath], atMost width: Int, _ body: @escaping @BusActor @Sendable (ObjectPath) async -> T?
) async -> [T] {
    var results: [T] = []
    var start = 0
    while start < paths.count {
        let batch = paths[start..<min(start + width, paths.count)]
        let tasks = batch.map { path in BusActor.task { await body(path) } }
        for task in tasks {
            if let value = await task.value { results.append(value) }
        }
        start += width
    }
    return results
}
