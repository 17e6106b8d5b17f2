/// Why a text was refused, and on which line: a cache file's (``PositionCacheFormatError``,
/// ``CellAnswerCacheFormatError``).
///
/// Its ``description`` reads `line <n>: <problem>`.
public struct LineError<Problem: Sendable & Equatable & CustomStringConvertible>: Error, Sendable, Equatable,
    CustomStringConvertible
{
    /// The 1-based line.
    public var line: Int
    /// What is wrong.
    public var problem: Problem

    /// Makes an error.
    public init(line: Int, problem: Problem) {
        self.line = line
        self.problem = problem
    }

    /// `line <n>: <problem>`.
    public var description: String { "line \(line): \(problem)" }
}
