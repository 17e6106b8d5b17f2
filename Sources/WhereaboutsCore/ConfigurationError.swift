/// Why a configuration file was refused, and where.
///
/// Its ``description`` reads `<file>:<line>: key '<key>' in [<group>]: <problem>`; the key part, or the key and
/// group parts, are left out when the problem is about a whole group or a line.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public enum Problem: Sendable, Equatable, CustomStringConvertible {
        /// The text is not a valid key file.
        case syntax(KeyFileError.Problem)
        /// The value cannot be used; `expected` says what would do.
        case invalidValue(value: String, expected: String)
        /// A known section has a key it does not define; `known` lists the ones it does.
        case unknownKey(known: [String])
        /// An app entry lacks one of `allowed=`, `system=` and `users=`; the error's key names it.
        case missingKey
        /// `[replay]` says `enable=true` but gives no `path=`.
        case replayWithoutPath

        /// A human explanation.
        public var description: String {
            switch self {
            case .syntax(let problem):
                problem.description
            case .invalidValue(let value, let expected):
                "\(quoted(value)) is not \(expected)"
            case .unknownKey(let known):
                "unknown key; this group takes " + known.joined(separator: ", ")
            case .missingKey:
                "missing; every group that is not a known section is an app entry and needs allowed=, system= "
                    + "and users= (users= may be empty)"
            case .replayWithoutPath:
                "replay is enabled but the group has no path="
            }
        }
    }

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

    /// The same error, reported by the configuration: a bad value stays a bad value, the rest is syntax.
    init(_ error: KeyFileError) {
        let problem: Problem =
            switch error.problem {
            case .invalidValue(let value, let expected): .invalidValue(value: value, expected: expected)
            default: .syntax(error.problem)
            }
        self.init(file: error.file, line: error.line, group: error.group, key: error.key, problem: problem)
    }

    /// `<file>:<line>: key '<key>' in [<group>]: <problem>`, leaving out the parts that do not apply.
    public var description: String {
        locatedMessage(file: file, line: line, group: group, key: key, problem: problem.description)
    }
}
