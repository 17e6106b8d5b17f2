/// The times at which watched regions change with no fix: expiries, dwell times and undecided timeouts, soonest
/// first.
///
/// A binary heap of entries that may have gone stale (the region removed, replaced, or its phase changed): the
/// monitor checks an entry against the region when it comes due, drops stale ones from the top after every
/// change so that ``next`` is always a live deadline, and rebuilds the heap when stale entries outnumber the
/// regions.
struct RegionDeadlines: Sendable {
    /// What comes due.
    enum Kind: Int, Sendable, Comparable, CaseIterable {
        case expiry
        case dwell
        case undecided

        static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// One deadline of one region.
    struct Entry: Sendable, Comparable {
        var time: WallTime
        var number: UInt64
        var kind: Kind

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            (lhs.time, lhs.number, lhs.kind) < (rhs.time, rhs.number, rhs.kind)
        }
    }

    private var heap: [Entry] = []

    /// How many entries are held, stale ones included.
    var count: Int { heap.count }

    /// The soonest entry.
    var next: Entry? { heap.first }

    /// Adds an entry.
    mutating func insert(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child] < heap[parent] else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the soonest entry.
    mutating func removeNext() -> Entry? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let first = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left] < heap[smallest] { smallest = left }
            if right < heap.count, heap[right] < heap[smallest] { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return first
    }

    /// Replaces the entries with `entries`.
    mutating func rebuild(_ entries: [Entry]) {
        heap = entries.sorted()
    }
}
