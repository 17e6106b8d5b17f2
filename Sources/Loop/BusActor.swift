/// The global actor of everything that touches the bus connection: it runs on ``EventLoop/main``.
///
/// Loop callbacks (watches, timers, D-Bus handlers) are `@BusActor` and run synchronously on the loop thread;
/// code elsewhere reaches it with `await`.
@globalActor public actor BusActor {
    /// The actor instance behind the `@BusActor` attribute.
    public static let shared = BusActor()

    public nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.main.asUnownedSerialExecutor() }

    /// Runs `operation` as `@BusActor` code; the caller must already be on the loop thread.
    public static func assumeIsolated<T>(_ operation: @BusActor () throws -> T) rethrows -> T {
        EventLoop.main.checkIsolated()
        return try withoutActuallyEscaping(operation) { isolated in
            try unsafeBitCast(isolated, to: (() throws -> T).self)()
        }
    }
}

extension BusActor {
    /// Starts `operation` as a task on the loop that also prefers the loop as its task executor, so that after any
    /// suspension (a D-Bus reply, a timer) it resumes on the loop thread directly. A plain `Task { @BusActor in }`
    /// resumes from a continuation on the global thread pool first, which costs a thread switch and starts that
    /// pool's threads in a process that otherwise needs none.
    @discardableResult
    public static func task<Success: Sendable>(_ operation: sending @escaping @BusActor () async -> Success)
        -> Task<Success, Never>
    {
        Task(executorPreference: EventLoop.main, operation: operation)
    }
}
