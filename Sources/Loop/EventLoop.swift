import CEpoll
import Synchronization

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Readiness a file-descriptor watch asks for or reports, as `poll(2)` events (which `epoll(7)` numbers alike).
public struct IOEvents: OptionSet, Sendable, Hashable {
    public let rawValue: Int16
    public init(rawValue: Int16) { self.rawValue = rawValue }
    /// Data can be read.
    public static let readable = IOEvents(rawValue: Int16(POLLIN))
    /// Data can be written without blocking.
    public static let writable = IOEvents(rawValue: Int16(POLLOUT))
    /// An error condition (reported only).
    public static let error = IOEvents(rawValue: Int16(POLLERR))
    /// The peer hung up (reported only).
    public static let hangup = IOEvents(rawValue: Int16(POLLHUP))
}

/// Identifies a file-descriptor watch registered with ``EventLoop/addWatch(fd:events:handler:)``.
public struct WatchID: Hashable, Sendable {
    /// The number the loop gave the watch; the core's ``DescriptorWatch`` carries it (LoopScheduling).
    package let raw: UInt64

    package init(raw: UInt64) { self.raw = raw }
}

/// Identifies a timer registered with ``EventLoop/schedule(after:handler:)``.
public struct TimerID: Hashable, Sendable {
    /// The number the loop gave the timer; the core's ``ScheduledTimer`` carries it (LoopScheduling).
    package let raw: UInt64

    package init(raw: UInt64) { self.raw = raw }
}

/// One thread running an `epoll(7)` loop: file-descriptor watches, timers and queued work.
///
/// Watches keep `poll(2)`'s meaning: level-triggered, several watches on one descriptor (libdbus watches a socket
/// for reading and for writing apart), a paused watch not woken even by a hang-up, and a descriptor epoll refuses
/// (a regular file) always ready. The kernel keeps the set, so a wake-up costs the same with 1000 connections on the
/// loop as with one, where `poll(2)` passed and scanned all of them on every turn.
///
/// It is also a Swift `SerialExecutor`, the executor of ``BusActor``, so actor-isolated code and the loop's own
/// callbacks run on the same thread, in order, without hops. It is a `TaskExecutor` as well: a task that prefers it
/// (``BusActor/task(_:)``) and resumes from a continuation comes back straight to this thread, rather than by way
/// of the global thread pool and a second hop. Every method may be called from any thread; the callbacks always
/// run on the loop thread.
public final class EventLoop: SerialExecutor, TaskExecutor, @unchecked Sendable {
    /// The process's loop, started on first use. ``BusActor`` runs on it.
    public static let main = EventLoop()

    private struct Watch {
        var fd: Int32
        var events: IOEvents
        var handler: @BusActor @Sendable (IOEvents) -> Void
    }

    /// The watches on one descriptor, and what the epoll set holds for it.
    private struct Descriptor {
        /// Tells this registration of the descriptor's number from an earlier one whose events may still be in
        /// hand after its watches were removed and the number reused.
        var generation: UInt32
        var watches: [UInt64] = []
        /// The events the epoll set waits for (or, for one it refused, the loop); empty when nothing waits.
        var registered: IOEvents = []
    }

    private struct PendingTimer {
        var deadline: Int64
        var handler: @BusActor @Sendable () -> Void
    }

    /// State shared between the loop thread and callers on other threads; guarded by `lock`.
    private struct Shared {
        var jobs: [UnownedJob] = []
        var closures: [@BusActor @Sendable () -> Void] = []
        var watches: [UInt64: Watch] = [:]
        var descriptors: [Int32: Descriptor] = [:]
        /// The descriptors epoll refused (regular files): `poll(2)` calls them always ready, and so does the loop.
        var refused: Set<Int32> = []
        var nextGeneration: UInt32 = 1
        var timers: [UInt64: PendingTimer] = [:]
        var deadlines = DeadlineHeap()
        var nextID: UInt64 = 1
        var sleeping = false

        /// The heap keeps a cancelled timer until it would have come due: every call answered before its timeout
        /// cancels one, so a burst of calls would leave the heap, and the capacity of both tables, as large as the
        /// calls of a whole timeout. Once fewer than half of its entries are live, both are rebuilt from the live
        /// timers alone, which costs each cancellation a constant share.
        mutating func compactTimersIfSparse() {
            guard deadlines.count > 64, deadlines.count > 2 * timers.count else { return }
            timers = Dictionary(uniqueKeysWithValues: timers.map { ($0.key, $0.value) })
            deadlines = DeadlineHeap(timers.map { (deadline: $0.value.deadline, id: $0.key) })
        }
    }

    private let lock = Mutex(())
    private nonisolated(unsafe) var shared = Shared()
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let epoll: Int32
    private nonisolated(unsafe) var thread = pthread_t()

    /// Creates a loop and starts its thread.
    public init() {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { fatalError("event loop: pipe failed, errno \(errno)") }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { fatalError("event loop: epoll_create1 failed, errno \(errno)") }
        var wakeEvent = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: Self.wakeKey))
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, wakeRead, &wakeEvent) == 0 else {
            fatalError("event loop: epoll_ctl failed, errno \(errno)")
        }
        let context = Unmanaged.passRetained(self).toOpaque()
        let started = pthread_create(
            &thread, nil,
            { context in
                let loop = Unmanaged<EventLoop>.fromOpaque(context!).takeRetainedValue()
                loop.run()
            }, context)
        guard started == 0 else { fatalError("event loop: pthread_create failed, error \(started)") }
    }

    /// True when the caller is running on this loop's thread.
    public var isCurrent: Bool { pthread_equal(pthread_self(), thread) != 0 }

    // MARK: SerialExecutor

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        withShared { $0.jobs.append(unowned) }
        wake()
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    public func checkIsolated() {
        precondition(isCurrent, "not on the event loop thread")
    }

    // MARK: Work, watches, timers

    /// Runs `body` on the loop thread after the work already queued.
    public func execute(_ body: @escaping @BusActor @Sendable () -> Void) {
        withShared { $0.closures.append(body) }
        wake()
    }

    /// Calls `handler` on the loop thread whenever `fd` is ready for any of `events` (errors and hang-ups are
    /// always reported). The caller keeps ownership of `fd` and must remove the watch before closing it.
    @discardableResult
    public func addWatch(fd: Int32, events: IOEvents, handler: @escaping @BusActor @Sendable (IOEvents) -> Void)
        -> WatchID
    {
        let id = withShared { shared in
            let id = shared.nextID
            shared.nextID += 1
            shared.watches[id] = Watch(fd: fd, events: events, handler: handler)
            if shared.descriptors[fd] == nil {
                shared.descriptors[fd] = Descriptor(generation: shared.nextGeneration)
                shared.nextGeneration &+= 1
            }
            shared.descriptors[fd]?.watches.append(id)
            synchronise(fd, &shared, evenIfUnchanged: true)
            return id
        }
        return WatchID(raw: id)
    }

    /// Changes the events a watch waits for; an empty set pauses it.
    public func updateWatch(_ id: WatchID, events: IOEvents) {
        withShared { shared in
            guard let fd = shared.watches[id.raw]?.fd else { return }
            shared.watches[id.raw]?.events = events
            synchronise(fd, &shared)
        }
    }

    /// Stops a watch. Its handler is not called again once this returns on the loop thread.
    public func removeWatch(_ id: WatchID) {
        withShared { shared in
            guard let fd = shared.watches.removeValue(forKey: id.raw)?.fd else { return }
            shared.descriptors[fd]?.watches.removeAll { $0 == id.raw }
            synchronise(fd, &shared)
        }
    }

    /// Makes the epoll set wait for what `fd`'s watches ask, and forgets `fd` once it has none. A descriptor whose
    /// watches are all paused leaves the set, since epoll reports errors and hang-ups even for no events. A new
    /// watch tells the kernel even when the events are unchanged: the number may be a new descriptor's, its old one
    /// closed before its watches were removed and so dropped from the set.
    private func synchronise(_ fd: Int32, _ shared: inout Shared, evenIfUnchanged: Bool = false) {
        guard var descriptor = shared.descriptors[fd] else { return }
        let wanted = descriptor.watches.reduce(into: IOEvents()) { $0.formUnion(shared.watches[$1]?.events ?? []) }
        if shared.refused.contains(fd) {
            descriptor.registered = wanted
        } else if wanted != descriptor.registered || (evenIfUnchanged && !wanted.isEmpty) {
            var event = epoll_event(
                events: UInt32(UInt16(bitPattern: wanted.rawValue)),
                data: epoll_data_t(u64: UInt64(descriptor.generation) << 32 | UInt64(UInt32(bitPattern: fd))))
            let operation =
                wanted.isEmpty ? EPOLL_CTL_DEL : descriptor.registered.isEmpty ? EPOLL_CTL_ADD : EPOLL_CTL_MOD
            if epoll_ctl(epoll, operation, fd, &event) == 0
                // Closed and its number reused before its watches were removed: the kernel dropped the old one.
                || (operation == EPOLL_CTL_MOD && errno == ENOENT && epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) == 0)
            {
                descriptor.registered = wanted
            } else if errno == EPERM {
                shared.refused.insert(fd)
                descriptor.registered = wanted
            } else if wanted.isEmpty {
                // Closed before its watch was removed: the kernel dropped it from the set already.
                descriptor.registered = []
            }
        }
        if descriptor.watches.isEmpty {
            shared.descriptors[fd] = nil
            shared.refused.remove(fd)
        } else {
            shared.descriptors[fd] = descriptor
        }
    }

    /// Calls `handler` once on the loop thread after `delay`.
    @discardableResult
    public func schedule(after delay: Duration, handler: @escaping @BusActor @Sendable () -> Void) -> TimerID {
        let deadline = monotonicNanoseconds() &+ max(0, delay.nanosecondsClamped)
        let id = withShared { shared in
            let id = shared.nextID
            shared.nextID += 1
            shared.timers[id] = PendingTimer(deadline: deadline, handler: handler)
            shared.deadlines.push(deadline: deadline, id: id)
            return id
        }
        wake()
        return TimerID(raw: id)
    }

    /// Cancels a timer; a timer that already fired or was cancelled is ignored.
    public func cancel(_ id: TimerID) {
        withShared { shared in
            guard shared.timers.removeValue(forKey: id.raw) != nil else { return }
            shared.compactTimersIfSparse()
        }
    }

    /// How many entries the timers' deadline heap holds, cancelled ones included (for the tests).
    package var deadlineEntryCount: Int { withShared { $0.deadlines.count } }

    // MARK: The loop

    private func withShared<T>(_ body: (inout Shared) -> T) -> T {
        lock.withLock { _ in body(&shared) }
    }

    private func wake() {
        let mustWrite = withShared { shared in
            let sleeping = shared.sleeping
            shared.sleeping = false
            return sleeping
        }
        guard mustWrite else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private func drainWakePipe() {
        var buffer = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while withUnsafeMutableBytes(of: &buffer, { read(wakeRead, $0.baseAddress, $0.count) }) > 0 {}
    }

    private func run() -> Never {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        var ready: [(fd: Int32, generation: UInt32, events: IOEvents)] = []
        while true {
            runQueuedWork()
            runDueTimers()
            let timeout = sleepTimeout()
            let count = epoll_wait(epoll, &events, Int32(events.count), timeout)
            withShared { $0.sleeping = false }
            if count < 0 {
                guard errno == EINTR else { fatalError("event loop: epoll_wait failed, errno \(errno)") }
                continue
            }
            ready.removeAll(keepingCapacity: true)
            for event in events.prefix(Int(count)) {
                let key = event.data.u64
                if key == Self.wakeKey {
                    drainWakePipe()
                    continue
                }
                ready.append(
                    (
                        Int32(bitPattern: UInt32(truncatingIfNeeded: key)), UInt32(truncatingIfNeeded: key >> 32),
                        IOEvents(rawValue: Int16(truncatingIfNeeded: event.events))
                    ))
            }
            withShared { shared in
                for fd in shared.refused {
                    guard let descriptor = shared.descriptors[fd], !descriptor.registered.isEmpty else { continue }
                    ready.append((fd, descriptor.generation, descriptor.registered))
                }
            }
            for descriptor in ready {
                dispatch(descriptor.events, on: descriptor.fd, generation: descriptor.generation)
            }
        }
    }

    /// Calls the handler of each of `fd`'s watches that asked for any of `events`, or is told of an error or a
    /// hang-up, looking each up just before its call: an earlier handler may have removed or paused it.
    private func dispatch(_ events: IOEvents, on fd: Int32, generation: UInt32) {
        guard
            let watches = withShared({ shared in
                shared.descriptors[fd].flatMap { $0.generation == generation ? $0.watches : nil }
            })
        else { return }
        for id in watches {
            let call: (handler: @BusActor @Sendable (IOEvents) -> Void, events: IOEvents)? = withShared { shared in
                guard let watch = shared.watches[id], !watch.events.isEmpty else { return nil }
                let reported = events.intersection(watch.events.union([.error, .hangup]))
                return reported.isEmpty ? nil : (watch.handler, reported)
            }
            guard let call else { continue }
            BusActor.assumeIsolated { call.handler(call.events) }
        }
    }

    private func runQueuedWork() {
        while true {
            let (jobs, closures) = withShared { shared in
                defer {
                    shared.jobs.removeAll(keepingCapacity: true)
                    shared.closures.removeAll(keepingCapacity: true)
                }
                return (shared.jobs, shared.closures)
            }
            if jobs.isEmpty && closures.isEmpty { return }
            // A job queued here as a task executor's runs isolated to the actor as well: the loop runs one job at a
            // time, so it holds the actor anyway, and the job's hop to it is then no hop at all.
            for job in jobs {
                job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
            }
            for closure in closures { BusActor.assumeIsolated { closure() } }
        }
    }

    private func runDueTimers() {
        let now = monotonicNanoseconds()
        while true {
            let due: PendingTimer? = withShared { shared in
                while let top = shared.deadlines.peek, top.deadline <= now {
                    shared.deadlines.pop()
                    if let timer = shared.timers.removeValue(forKey: top.id) { return timer }
                }
                return nil
            }
            guard let timer = due else { return }
            BusActor.assumeIsolated { timer.handler() }
        }
    }

    /// The key of the wake pipe's event; a watched descriptor's key is its generation and number, never this.
    private static let wakeKey = UInt64.max

    /// How long the loop may sleep, in milliseconds (-1 for as long as nothing happens): not at all with work queued
    /// or a descriptor always ready, else until the next timer is due.
    private func sleepTimeout() -> Int32 {
        withShared { shared in
            let refusedWaiting = shared.refused.contains { shared.descriptors[$0]?.registered.isEmpty == false }
            if !shared.jobs.isEmpty || !shared.closures.isEmpty || refusedWaiting { return 0 }
            while let top = shared.deadlines.peek, shared.timers[top.id] == nil { shared.deadlines.pop() }
            shared.sleeping = true
            guard let next = shared.deadlines.peek else { return -1 }
            let remaining = next.deadline - monotonicNanoseconds()
            if remaining <= 0 { return 0 }
            return Int32(min(Int64(Int32.max), (remaining + 999_999) / 1_000_000))
        }
    }
}

/// The current time on the monotonic clock, in nanoseconds.
public func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

/// The current wall-clock time, in microseconds since the Unix epoch.
public func wallMicroseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1_000
}

extension Duration {
    /// The duration in nanoseconds, saturating at `Int64`'s bounds.
    var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).overflow
            ? (seconds < 0 ? .min : .max) : scaled + attoseconds / 1_000_000_000
    }
}

/// A binary min-heap of timer deadlines; cancelled entries are skipped lazily.
struct DeadlineHeap {
    private var items: [(deadline: Int64, id: UInt64)] = []

    init() {}

    /// A heap of `entries`, in any order, its storage their size.
    init(_ entries: [(deadline: Int64, id: UInt64)]) {
        items = entries
        for parent in stride(from: items.count / 2 - 1, through: 0, by: -1) { siftDown(from: parent) }
    }

    var count: Int { items.count }

    var peek: (deadline: Int64, id: UInt64)? { items.first }

    mutating func push(deadline: Int64, id: UInt64) {
        items.append((deadline, id))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].deadline < items[parent].deadline else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        siftDown(from: 0)
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count && items[left].deadline < items[smallest].deadline { smallest = left }
            if right < items.count && items[right].deadline < items[smallest].deadline { smallest = right }
            if smallest == parent { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
