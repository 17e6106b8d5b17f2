import WhereaboutsCore

/// A cache entry's time stored, position and accuracy: what every cache file writes for an entry.
public protocol StoredPlace {
    /// When the entry was stored.
    var stored: WallTime { get }
    /// Degrees north.
    var latitude: Double { get }
    /// Degrees east.
    var longitude: Double { get }
    /// Metres.
    var accuracy: Double { get }
}

extension PositionCache.Entry: StoredPlace {}
extension CellAnswerCache.Entry: StoredPlace {}

/// Traps unless `read` holds as many entries as `expected`, each with the same time stored as its counterpart and,
/// to the bit, the same latitude, longitude and accuracy; `checkRest` checks the other fields of each pair.
public func checkSameEntries<Entry: StoredPlace>(
    _ read: [Entry], _ expected: [Entry], checkRest: (_ entry: Entry, _ other: Entry) -> Void
) {
    precondition(read.count == expected.count, "\(read.count) entries instead of \(expected.count)")
    for (entry, other) in zip(read, expected) {
        precondition(entry.stored == other.stored, "time differs")
        precondition(
            entry.latitude.bitPattern == other.latitude.bitPattern,
            "latitude \(entry.latitude) != \(other.latitude)")
        precondition(
            entry.longitude.bitPattern == other.longitude.bitPattern,
            "longitude \(entry.longitude) != \(other.longitude)")
        precondition(
            entry.accuracy.bitPattern == other.accuracy.bitPattern,
            "accuracy \(entry.accuracy) != \(other.accuracy)")
        checkRest(entry, other)
    }
}
