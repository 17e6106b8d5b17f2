import CGPSD
import Loop
import WhereaboutsProviders

#if canImport(Glibc)
    import Glibc
#endif

/// Connects to gpsd through libgps and asks for its reports: streamed as JSON (`?WATCH`), and at once the latest
/// fix it holds (`?POLL;`).
///
/// libgps is loaded at the first connection (the shim's `dlopen`); one that cannot be loaded fails the attempt with
/// the loader's reason. `gps_open` resolves the host and connects before it returns, so it, and only it, runs on a
/// short-lived thread of its own. The commands are then sent on the bus thread, and the socket is set non-blocking
/// for the stream to read.
struct GPSDOpener: StreamOpener {
    let host: String
    let port: String

    func open(_ completion: @escaping @BusActor @Sendable (StreamOpening) -> Void) {
        let host = host
        let port = port
        do {
            try WorkerThread.run {
                var message: UnsafePointer<CChar>? = nil
                guard let gps = wb_gps_open(host, port, &message) else {
                    return GPSDConnectResult.failed(message.map { String(cString: $0) } ?? "cannot connect")
                }
                return .connected(gps)
            } then: { result in
                completion(Self.startWatching(result))
            }
        } catch {
            completion(.failed(error.description))
        }
    }

    private static func startWatching(_ result: GPSDConnectResult) -> StreamOpening {
        switch result {
        case .failed(let reason):
            return .failed(reason)
        case .connected(let gps):
            let socket = wb_gps_socket(gps)
            let connection = StreamConnection(descriptor: socket) { wb_gps_close(gps) }
            let flags = fcntl(socket, F_GETFL)
            guard wb_gps_watch(gps, 1) == 0, wb_gps_poll(gps) == 0, flags >= 0,
                fcntl(socket, F_SETFL, flags | O_NONBLOCK) == 0
            else {
                connection.close()
                return .failed("cannot start watching")
            }
            return .opened(connection)
        }
    }
}

/// What `gps_open` came to on the worker thread: the connection, which passes to the bus thread with the result,
/// or why there is none.
private enum GPSDConnectResult: @unchecked Sendable {
    case connected(OpaquePointer)
    case failed(String)
}
