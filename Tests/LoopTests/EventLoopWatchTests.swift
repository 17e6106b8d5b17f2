import Glibc
import Loop
import Testing

/// The event loop's descriptor watches keep `poll(2)`'s meaning on epoll: several watches on one descriptor, paused
/// watches told nothing, regular files always ready, a reused descriptor number watched afresh; and cancelled timers
/// do not pile up. The time limit turns
/// a watch that is never told into a failure rather than a hang; it is wide because in the whole suite these tests
/// share the loop with every other, and wait their turns.
@Suite("Event loop watches", .timeLimit(.minutes(5)))
@BusActor
struct EventLoopWatchTests {
    /// libdbus watches a connection's socket twice, for reading and for writing.
    @Test func twoWatchesOnOneDescriptorAreEachToldTheirOwnEvents() async throws {
        let (ours, peer) = try socketPair()
        defer { [ours, peer].forEach { _ = close($0) } }
        let reads = Recorder()
        let writes = Recorder()
        let reading = EventLoop.main.addWatch(fd: ours, events: .readable) { reads.note($0) }
        let writing = EventLoop.main.addWatch(fd: ours, events: .writable) { writes.note($0) }
        defer { [reading, writing].forEach(EventLoop.main.removeWatch) }
        await writes.waitForCalls(1)
        #expect(writes.events.allSatisfy { $0 == .writable })
        EventLoop.main.updateWatch(writing, events: [])
        #expect(reads.events.isEmpty)
        try send(peer)
        await reads.waitForCalls(1)
        #expect(reads.events.first == .readable)
    }

    /// poll(2) leaves a watch asking for nothing out, hang-ups included; epoll would report them on every turn.
    @Test func aPausedWatchIsNotToldOfAHangUp() async throws {
        let (ours, peer) = try socketPair()
        defer { _ = close(ours) }
        let calls = Recorder()
        let watch = EventLoop.main.addWatch(fd: ours, events: []) { calls.note($0) }
        defer { EventLoop.main.removeWatch(watch) }
        _ = close(peer)
        await turns(3)
        #expect(calls.events.isEmpty)
        EventLoop.main.updateWatch(watch, events: .readable)
        await calls.waitForCalls(1)
        #expect(calls.events.first?.contains(.hangup) == true)
    }

    /// epoll refuses regular files; poll(2) calls them always ready, and so does the loop, until the watch goes.
    @Test func aRegularFileIsAlwaysReadyUntilItsWatchIsRemoved() async throws {
        let path = "/tmp/event-loop-watch-\(getpid())"
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        defer {
            _ = close(fd)
            _ = unlink(path)
        }
        let calls = Recorder()
        let watch = EventLoop.main.addWatch(fd: fd, events: .readable) { calls.note($0) }
        await calls.waitForCalls(3)
        EventLoop.main.removeWatch(watch)
        let afterRemoval = calls.events.count
        await turns(3)
        #expect(calls.events.count == afterRemoval)
    }

    /// A handler that removes another watch of its descriptor: the removed one is not called on that turn.
    @Test func aWatchRemovedByAnEarlierHandlerIsNotCalled() async throws {
        let (ours, peer) = try socketPair()
        defer { [ours, peer].forEach { _ = close($0) } }
        let first = Recorder()
        let second = Recorder()
        var secondWatch: WatchID?
        let firstWatch = EventLoop.main.addWatch(fd: ours, events: .readable) { events in
            first.note(events)
            if let watch = secondWatch { EventLoop.main.removeWatch(watch) }
            secondWatch = nil
        }
        defer { EventLoop.main.removeWatch(firstWatch) }
        secondWatch = EventLoop.main.addWatch(fd: ours, events: .readable) { second.note($0) }
        try send(peer)
        await first.waitForCalls(1)
        await turns(3)
        #expect(second.events.isEmpty)
    }

    /// A descriptor closed before its watch was removed, and its number given to a new one: the new watch works.
    @Test func aReusedDescriptorNumberIsWatchedAfresh() async throws {
        let (old, oldPeer) = try socketPair()
        let stale = EventLoop.main.addWatch(fd: old, events: .readable) { _ in }
        _ = close(old)
        _ = close(oldPeer)
        let (ours, peer) = try socketPair()
        defer { [ours, peer].forEach { _ = close($0) } }
        let calls = Recorder()
        let watch = EventLoop.main.addWatch(fd: ours, events: .readable) { calls.note($0) }
        defer { [stale, watch].forEach(EventLoop.main.removeWatch) }
        try send(peer)
        await calls.waitForCalls(1)
        #expect(calls.events.first == .readable)
    }

    /// Each call answered before its timeout cancels a timer; a burst of them must not leave the heap of deadlines
    /// holding one entry for each until its timeout would have come.
    @Test func cancelledTimersDoNotPileUpInTheHeap() {
        let timers = (0..<10_000).map { _ in EventLoop.main.schedule(after: .seconds(3600)) {} }
        timers.forEach(EventLoop.main.cancel)
        // Other suites' timers share the loop, so the bound leaves them room; without compaction it is 10,000.
        #expect(EventLoop.main.deadlineEntryCount < 2000)
    }

    // MARK: Helpers

    /// The events each call of a handler was given, and a wait for a number of calls.
    @BusActor
    final class Recorder {
        private(set) var events: [IOEvents] = []
        private var waiter: (count: Int, continuation: CheckedContinuation<Void, Never>)?

        func note(_ ready: IOEvents) {
            events.append(ready)
            if let waiter, events.count >= waiter.count {
                self.waiter = nil
                waiter.continuation.resume()
            }
        }

        func waitForCalls(_ count: Int) async {
            guard events.count < count else { return }
            await withCheckedContinuation { waiter = (count, $0) }
        }
    }

    /// Waits for `count` turns of the loop, each a wait for descriptors between two timers.
    private func turns(_ count: Int) async {
        for _ in 0..<count {
            await withCheckedContinuation { continuation in
                EventLoop.main.schedule(after: .zero) { continuation.resume() }
            }
        }
    }

    private func socketPair() throws -> (Int32, Int32) {
        var ends: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
        return (ends[0], ends[1])
    }

    private func send(_ fd: Int32) throws {
        var byte: UInt8 = 1
        try #require(write(fd, &byte, 1) == 1)
    }
}
