/// Method calls read from the bus and not yet handled, kept per caller and handed out in turn: the groups of
/// callers take turns (the service groups the connections of one user), and within a group its callers do. A user
/// that floods the service from many connections waits behind its own calls, while another user's call waits for
/// at most one call of each other group.
///
/// Calls of one caller keep their order: when a caller's group changes (its user became known), the calls it has
/// waiting move to the new group together, in their order (``regroup(_:in:)``, or its next call). A caller may have
/// ``maximumPerCaller`` calls waiting; the next is refused by ``append(_:from:in:pastTheLimit:)``. A caller can be
/// slowed (``slow(_:interval:until:now:)``): until then its calls are handed out one per interval at most, whatever
/// its turns, so that a caller that keeps coming back past a limit, each refusal answered at once, cannot keep the
/// service and the bus busy at the rate they answer it.
struct CallTurns<Call> {
    /// The most calls one caller may have waiting.
    static var maximumPerCaller: Int { 4096 }

    private var queues: [String: Queue] = [:]
    /// The groups with calls waiting, by their key.
    private var groups: [String: Group] = [:]
    /// The groups with calls waiting, in turn order, and the next one's place.
    private var order: [String] = []
    private var position = 0
    /// The calls waiting, of all callers.
    private(set) var count = 0
    /// Slowed callers: the time (monotonic nanoseconds) before which their next call is not handed out, the
    /// interval between their calls, and when they are no longer slowed.
    private var paces: [String: (readyAt: Int64, interval: Int64, until: Int64)] = [:]

    /// The callers of one group with calls waiting, in turn order, and the next one's place.
    private struct Group {
        var callers: [String] = []
        var position = 0
    }

    private struct Queue {
        /// The group whose turns the caller's calls take.
        var group: String
        /// The calls, those already handed out emptied: a call handed out is let go at once (a held call keeps its
        /// header alone, and its message must not stay alive here). `counted` is false for work let past the limit.
        var calls: [(call: Call, counted: Bool)?] = []
        var head = 0
        /// The calls waiting that count toward ``CallTurns/maximumPerCaller``.
        var counted = 0
        var count: Int { calls.count - head }

        mutating func popFirst() -> Call? {
            guard head < calls.count, let entry = calls[head] else { return nil }
            calls[head] = nil
            head += 1
            if entry.counted { counted -= 1 }
            if head >= 64 && head * 2 >= calls.count {
                calls.removeFirst(head)
                head = 0
            }
            return entry.call
        }
    }

    var isEmpty: Bool { count == 0 }

    /// Queues `call` of `caller` in the turns of `group` (the caller's own when nil), with the caller's calls still
    /// waiting if they wait in another; false when the caller already has the most calls waiting, unless
    /// `pastTheLimit` (for work the caller's calls already started, which the limit has let through once, and which
    /// does not count toward it).
    mutating func append(_ call: Call, from caller: String, in group: String? = nil, pastTheLimit: Bool = false)
        -> Bool
    {
        if !pastTheLimit, let waiting = queues[caller]?.counted, waiting >= Self.maximumPerCaller { return false }
        if queues[caller] != nil {
            regroup(caller, in: group)
        } else {
            let key = group ?? caller
            queues[caller] = Queue(group: key)
            join(key, caller)
        }
        queues[caller]!.calls.append((call, !pastTheLimit))
        if !pastTheLimit { queues[caller]!.counted += 1 }
        count += 1
        return true
    }

    /// Moves the calls `caller` has waiting, if any, to the turns of `group` (the caller's own when nil), last among
    /// its callers.
    mutating func regroup(_ caller: String, in group: String?) {
        let key = group ?? caller
        guard let from = queues[caller]?.group, from != key else { return }
        leave(from, caller)
        join(key, caller)
        queues[caller]!.group = key
    }

    /// Adds `caller` to the callers of `key` that take its turns, last.
    private mutating func join(_ key: String, _ caller: String) {
        if groups[key] == nil {
            groups[key] = Group()
            order.append(key)
        }
        groups[key]!.callers.append(caller)
    }

    /// Takes `caller` out of the callers of `key`, and the group out of the turns once it has none.
    private mutating func leave(_ key: String, _ caller: String) {
        guard var group = groups.removeValue(forKey: key) else { return }
        if let index = group.callers.firstIndex(of: caller) {
            group.callers.remove(at: index)
            if index < group.position { group.position -= 1 }
        }
        if !group.callers.isEmpty {
            groups[key] = group
        } else if let index = order.firstIndex(of: key) {
            order.remove(at: index)
            if index < position { position -= 1 }
        }
    }

    /// The next call at `now`, the groups taking turns and their callers within them; nil when none is waiting, or
    /// every caller waiting is slowed and not yet due (``nextDue``).
    mutating func next(now: Int64) -> Call? {
        for _ in 0..<order.count {
            if position >= order.count { position = 0 }
            let key = order[position]
            // Taken out while it changes, so that its callers' list is not copied.
            guard var group = groups.removeValue(forKey: key) else {
                assertionFailure("the group \(key) takes turns and has no callers")
                order.remove(at: position)
                continue
            }
            let call = next(of: &group, now: now)
            if group.callers.isEmpty {
                order.remove(at: position)
            } else {
                groups[key] = group
                position += 1
            }
            if let call { return call }
        }
        return nil
    }

    /// The next call of `group`'s callers in turn at `now`; nil when each is slowed and not yet due.
    private mutating func next(of group: inout Group, now: Int64) -> Call? {
        for _ in 0..<group.callers.count {
            if group.position >= group.callers.count { group.position = 0 }
            let caller = group.callers[group.position]
            if let pace = paces[caller] {
                if pace.until <= now {
                    paces[caller] = nil
                } else if pace.readyAt > now {
                    group.position += 1
                    continue
                } else {
                    paces[caller]!.readyAt = now + pace.interval
                }
            }
            guard let call = queues[caller]?.popFirst() else { return nil }
            count -= 1
            if queues[caller]!.count == 0 {
                queues[caller] = nil
                group.callers.remove(at: group.position)
            } else {
                group.position += 1
            }
            return call
        }
        return nil
    }

    /// When a slowed caller's next call is due, if calls wait and none is due before.
    var nextDue: Int64? { queues.keys.compactMap { paces[$0]?.readyAt }.min() }

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
        leave(queue.group, caller)
        return queue.calls[queue.head...].compactMap { $0?.call }
    }

    /// Forgets every call waiting and returns them, for a connection that closes.
    mutating func dropAll() -> [Call] {
        let calls = queues.values.flatMap { queue in queue.calls[queue.head...].compactMap { $0?.call } }
        self = CallTurns()
        return calls
    }
}
