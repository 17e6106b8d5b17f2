/// Why a regions file was refused, and on which line: `<file>:<line>: <problem>`. The service moves the file
/// aside rather than trusting any of it.
public typealias RegionFileError = LocatedError<RegionFileProblem>

/// What is wrong with a line of a regions file (see ``RegionFile``).
public enum RegionFileProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// The first line is not ``RegionFile/header``.
    case missingHeader
    /// The first line names a version this build does not read.
    case unsupportedVersion(String)
    /// A line is empty (only the text's last line break may be followed by nothing).
    case emptyLine
    /// A line is neither a `region` nor an `event`.
    case unknownLineKind(String)
    /// A line has the wrong number of tab-separated fields.
    case fieldCount(found: Int, expected: Int)
    /// A field cannot be read: a bad number, flag, state or escape.
    case invalidField(name: String, value: String)
    /// A region's definition breaks AddRegion's rules.
    case invalidRegion(RegionArgumentError)
    /// The fields do not fit together: a state without the fix that decided it, or with one it cannot have.
    case inconsistentState(String)
    /// A second region of the same owner and id.
    case duplicateRegion(String)
    /// An owner with more than ``Region/limitPerOwner`` regions.
    case tooManyRegions(RegionOwner)
    /// An owner with more than ``RegionMonitor/pendingLimit`` pending events.
    case tooManyPendingEvents(RegionOwner)
    /// A line of another user in a user's own file.
    case otherUser(UInt32)
    /// A user's file with more than ``Region/limitPerUser`` regions.
    case tooManyRegionsOfUser(UInt32)
    /// A user's file with more than ``RegionMonitor/pendingLimitPerUser`` pending events.
    case tooManyPendingEventsOfUser(UInt32)

    /// A human explanation.
    public var description: String {
        switch self {
        case .missingHeader: "not a regions file: the first line is not '\(RegionFile.header)'"
        case .unsupportedVersion(let version): "unsupported version \(shown(version))"
        case .emptyLine: "empty line"
        case .unknownLineKind(let kind): "line kind \(shown(kind)) is neither 'region' nor 'event'"
        case .fieldCount(let found, let expected): "\(found) tab-separated fields instead of \(expected)"
        case .invalidField(let name, let value): "\(name) \(shown(value)) cannot be read"
        case .invalidRegion(let error): "the region is not valid: \(error)"
        case .inconsistentState(let reason): reason
        case .duplicateRegion(let id): "a second region \(shown(id)) of the same owner"
        case .tooManyRegions(let owner):
            "app \(shown(owner.app)) of user \(owner.user) has more than \(Region.limitPerOwner) regions"
        case .tooManyPendingEvents(let owner):
            "app \(shown(owner.app)) of user \(owner.user) has more than \(RegionMonitor.pendingLimit) pending events"
        case .otherUser(let user): "a line of user \(user) in another user's file"
        case .tooManyRegionsOfUser(let user): "user \(user) has more than \(Region.limitPerUser) regions"
        case .tooManyPendingEventsOfUser(let user):
            "user \(user) has more than \(RegionMonitor.pendingLimitPerUser) pending events"
        }
    }

    /// `text` quoted, cut to 40 characters.
    private func shown(_ text: String) -> String { "'" + (text.count > 40 ? text.prefix(40) + "…" : text) + "'" }
}
