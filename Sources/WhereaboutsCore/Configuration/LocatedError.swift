/// Why a file was refused, and where: a key file's syntax (``KeyFileError``) or a configuration's content
/// (``ConfigurationError``).
///
/// Its ``description`` reads `<file>:<line>: key '<key>' in [<group>]: <problem>`; the key part, or the key and
/// group parts, are left out when the problem is about a whole group or a line.
public struct LocatedError<Problem: Sendable & Equatable & CustomStringConvertible>: Error, Sendable, Equatable,
    CustomStringConvertible
{
    /// The file name given to the parser.
    public var file: String
    /// The 1-based line number.
    public var line: Int
    /// The group the problem is in, when there is one.
    public var group: String?
    /// The key the problem is about, when there is one.
    public var key: String?
    /// What is wrong.
    public var problem: Problem

    /// Makes an error.
    public init(file: String, line: Int, group: String? = nil, key: String? = nil, problem: Problem) {
        self.file = file
        self.line = line
        self.group = group
        self.key = key
        self.problem = problem
    }

    /// `<file>:<line>: key '<key>' in [<group>]: <problem>`, leaving out the parts that do not apply.
    public var description: String {
        locatedMessage(file: file, line: line, group: group, key: key, problem: problem.description)
    }
}

/// Formats `<file>:<line>: key '<key>' in [<group>]: <problem>`, dropping the key and group parts that are nil.
func locatedMessage(file: String, line: Int, group: String?, key: String?, problem: String) -> String {
    var message = "\(file):\(line): "
    switch (key, group) {
    case (let key?, let group?): message += "key '\(key)' in [\(group)]: "
    case (let key?, nil): message += "key '\(key)': "
    case (nil, let group?): message += "[\(group)]: "
    case (nil, nil): break
    }
    return message + problem
}
