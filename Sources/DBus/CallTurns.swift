/// Method calls read from the bus and not yet handled, kept per caller and handed out one caller at a time in
/// turn: a connection that floods the service waits behind its own calls, while another's call waits for at most
/// one call of each other caller.
///
/// Calls of one caller keep their order. A caller may have ``maximumPerCaller`` calls waiting; the next is refused
/// by ``append(_:from:)``. A caller can be slowed (``slow(_:interval:until:now:)``): until then its calls are
/// handed out one per interval at most, whatever its turns, so that a caller that keeps coming back past a limit,
/// each refusal answered at once, cannot keep the service and the bus busy at the rate they answer it.
struct CallTurns<Call> {
    /// The most calls one caller may have waiting.
    static var maximumPerCaller: Int { 4096 }

    private var queues: [String: Queue] = [:]
    /// The callers with calls waiting, in turn order, and the next one's place.
    private var order: [String] = []
    private var position = 0
    /// The calls waiting, of all callers.
    private(set) var count = 0
    /// Slowed callers: the time (monotonic nanoseconds) before which their next call is not handed out, the
    /// interval between their calls, and when they are no longer slowed.
    private var paces: [String: (readyAt: Int64, interval: Int64, until: Int64)] = [:]

    private struct Queue {
        /// The calls, those already handed out emptied: a call handed out is let go at once (a held call keeps its
        /// header alone, and its message must not stay alive here).
        var calls: [Call?] = []
        var head = 0
        var count: Int { calls.count - head }

        mutating func popFirst() -> Call? {
            guard head < calls.count else { return nil }
            let call = calls[head]
            calls[head] = nil
            head += 1
            if head >= 64 && head * 2 >= calls.count {
                calls.removeFirst(head)
                head = 0
            }
            return call
        }
    }

    var isEmpty: Bool { count == 0 }

    /// Queues `call` of `caller`; false when the caller already has the most calls waiting, unless
    /// `pastTheLimit` (for work the caller's calls already started, which the limit has let through once).
    mutating func append(_ call: Call, from caller: String, pastTheLimit: Bool = false) -> Bool {
        if !pastTheLimit, let waiting = queues[caller]?.count, waiting >= Self.maximumPerCaller { return false }
        if queues[caller] == nil {
            queues[caller] = Queue()
            order.append(caller)
        }
        queues[caller]!.calls.append(call)
        count += 1
        return true
    }

    /// The next caller's first call at `now`, the callers taking turns; nil when none is waiting, or every caller
    /// waiting is slowed and not yet due (``nextDue``).
    mutating func next(now: Int64) -> Call? {
        guard !order.isEmpty else { return nil }
        for _ in 0..<order.count {
            if position >= order.count { position = 0 }
            let caller = order[position]
            if let pace = paces[caller] {
                if pace.until <= now {
                    paces[caller] = nil
                } else if pace.readyAt > now {
                    position += 1
                    continue
                } else {
                    paces[caller]!.readyAt = now + pace.interval
                }
            }
            guard let call = queues[caller]?.popFirst() else { return nil }
            count -= 1
            if queues[caller]!.count == 0 {
                queues[caller] = nil
                order.remove(at: position)
            } else {
                position += 1
            }
            return call
        }
        return nil
    }

    /// When a slowed caller's next call is due, if calls wait and none is due before.
    var nextDue: Int64? { order.compactMap { paces[$0]?.readyAt }.min() }

    /// Hands out `caller`'s calls one per `interval` at most until `until`.
    mutating func slow(_ caller: String, interval: Int64, until: Int64, now: Int64) {
        let readyAt = max(paces[caller]?.readyAt ?? now, now)
        paces[caller] = (readyAt, interval, until)
        if paces.count > 4 * Self.maximumPerCaller { paces = paces.filter { $0.value.until > now } }
    }

    /// Forgets the calls of `caller`, which left the bus, and returns them: nothing can answer them.
    @discardableResult
    mutating func dropAll(from caller: String) -> [Call] {
        paces[caller] = nil
        guard let queue = queues.removeValue(forKey: caller) else { return [] }
        count -= queue.count
        if let index = order.firstIndex(of: caller) {
            order.remove(at: index)
            if index < position { position -= 1 }
        }
        return queue.calls[queue.head...].compactMap { $0 }
    }
}
