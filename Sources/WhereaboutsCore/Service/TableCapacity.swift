extension Dictionary {
    /// Gives back the storage a burst left behind: once at most an eighth of the table's slots are in use (and it
    /// has more than 64), it is copied into one sized for what it holds, and an empty one holds no storage at all.
    ///
    /// A Swift dictionary never shrinks as entries go, so a table that grew for five thousand peers at once would
    /// keep their slots for good. The service's tables of peers and clients call this after each removal: the
    /// copies shrink by a factor of eight or more each, so a removal costs O(1) more, amortised.
    public mutating func releaseUnusedCapacity() {
        guard capacity > 64, count <= capacity / 8 else {
            if isEmpty && capacity > 0 { self = [:] }
            return
        }
        var compact = Self(minimumCapacity: count)
        for (key, value) in self { compact[key] = value }
        self = compact
    }
}
