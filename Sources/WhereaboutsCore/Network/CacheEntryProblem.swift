/// What can be wrong with the fields a cache format adds to the time, position and accuracy every cache entry has
/// (see ``CacheLineProblem``), and what that format is called.
public protocol CacheEntryProblem: Sendable, Equatable, CustomStringConvertible {
    /// What a file of the format is, as in `not a position cache`.
    static var fileKind: String { get }
    /// The first line of a file of the format, without its line break: `<name> <version>`.
    static var header: String { get }
    /// The fields of an entry line in order, as in `time, latitude, longitude, accuracy and cells`.
    static var entryFields: String { get }
}
