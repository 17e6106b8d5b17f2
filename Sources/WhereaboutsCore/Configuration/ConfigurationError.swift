/// Why a configuration file was refused, and where: `<file>:<line>: key '<key>' in [<group>]: <problem>`.
public typealias ConfigurationError = LocatedError<ConfigurationProblem>

/// What is wrong with a configuration.
public enum ConfigurationProblem: Sendable, Equatable, CustomStringConvertible {
    /// The text is not a valid key file.
    case syntax(KeyFileProblem)
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

extension LocatedError where Problem == ConfigurationProblem {
    /// The same error, reported by the configuration: a bad value stays a bad value, the rest is syntax.
    init(_ error: KeyFileError) {
        let problem: Problem =
            switch error.problem {
            case .invalidValue(let value, let expected): .invalidValue(value: value, expected: expected)
            default: .syntax(error.problem)
            }
        self.init(file: error.file, line: error.line, group: error.group, key: error.key, problem: problem)
    }
}
