/// Method calls read from the bus and not yet handled, kept per caller and handed out one caller at a time in
/// turn: a connection that floods the service waits behind its own calls, while another's call waits for at most
/// one call of each other caller.
///
/// Calls of one caller keep their order. A caller may have ``maximumPerCaller`` calls waiting; the next is refused
/// by ``append(_:from:)``.
struct CallTurns<Call> {
    /// The most calls one caller may have waiting.
    static var maximumPerCaller: Int { 4096 }

    private var queues: [String: Queue] = [:]
    /// The callers with calls waiting, in turn order, and the next one's place.
    private var order: [String] = []
    private var position = 0
    /// The calls waiting, of all callers.
    private(set) var count = 0

    private struct Queue {
        var calls: [Call] = []
        var head = 0
        var count: Int { calls.count - head }

        mutating func popFirst() -> Call? {
            guard head < calls.count else { return nil }
            let call = calls[head]
            head += 1
            if head >= 64 && head * 2 >= calls.count {
                calls.removeFirst(head)
                head = 0
            }
            return call
        }
    }

    var isEmpty: Bool { count == 0 }

    /// Queues `call` of `caller`; false when the caller already has the most calls waiting.
    mutating func append(_ call: Call, from caller: String) -> Bool {
        if let waiting = queues[caller]?.count, waiting >= Self.maximumPerCaller { return false }
        if queues[caller] == nil {
            queues[caller] = Queue()
            order.append(caller)
        }
        queues[caller]!.calls.append(call)
        count += 1
        return true
    }

    /// The next caller's first call, the callers taking turns.
    mutating func next() -> Call? {
        guard !order.isEmpty else { return nil }
        if position >= order.count { position = 0 }
        let caller = order[position]
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

    /// Forgets the calls of `caller`, which left the bus: nothing can answer them.
    mutating func dropAll(from caller: String) {
        guard let queue = queues.removeValue(forKey: caller) else { return }
        count -= queue.count
        guard let index = order.firstIndex(of: caller) else { return }
        order.remove(at: index)
        if index < position { position -= 1 }
    }
}
