import Loop

#if canImport(Glibc)
    import Glibc
#endif

/// One blocking call on a short-lived thread of its own, its result handed to the bus thread.
enum WorkerThread {
    /// `pthread_create` refused a thread, with this error number.
    struct StartFailure: Error, CustomStringConvertible {
        let code: Int32
        var description: String { "cannot start a thread (error \(code))" }
    }

    /// Starts a thread that runs `work`, then ends once it has queued `deliver` with the result on the event loop.
    static func run<Result: Sendable>(
        _ work: @escaping @Sendable () -> Result, then deliver: @escaping @BusActor @Sendable (Result) -> Void
    ) throws(StartFailure) {
        let job = Job {
            let result = work()
            EventLoop.main.execute { deliver(result) }
        }
        let context = Unmanaged.passRetained(job).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<Job>.fromOpaque(context!).takeRetainedValue().body()
                return nil
            }, context)
        guard created == 0 else {
            Unmanaged<Job>.fromOpaque(context).release()
            throw StartFailure(code: created)
        }
        pthread_detach(thread)
    }

    /// What the thread runs, kept alive by the thread until it is done.
    private final class Job: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
}
