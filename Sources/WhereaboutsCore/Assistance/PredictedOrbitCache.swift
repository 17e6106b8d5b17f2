/// The predicted-orbit files downloaded, kept in the state folder while they are valid, so that a restarted
/// service, or a modem coming back, is assisted without another download.
///
/// One file per list of servers (modems of one kind list the same ones); storing a file replaces the one for the
/// same servers, and at most ``capacity`` are kept, the least recently stored dropped. A file past its expiry is
/// neither returned nor kept, nor one for more than ``maximumServers`` servers or a URL longer than
/// ``maximumURLLength`` bytes, which bounds the file's size.
///
/// **Format.** The first line is `predicted-orbits 1`; then one line per file, its fields separated by one space:
/// the download time and the expiry in microseconds since 1970, the URL that answered, the file in base64, then
/// each server of the list. Nothing in it leaves the machine.
public struct PredictedOrbitCache: Sendable, Equatable, TextCache {
    /// Why a cache text was refused.
    public typealias FormatError = LineError<PredictedOrbitCacheProblem>

    /// `predicted-orbit file`.
    public static let fileKind = "predicted-orbit file"
    /// Four lists of servers.
    public static let defaultCapacity = 4
    static let header = "predicted-orbits 1"
    /// The most servers a kept file's list has.
    public static let maximumServers = 8
    /// The longest URL, in bytes, a kept file names.
    public static let maximumURLLength = 512

    /// The most files kept.
    public let capacity: Int
    /// The files, the least recently stored first.
    public private(set) var files: [PredictedOrbitFile] = []

    /// An empty cache keeping at most `capacity` files.
    public init(capacity: Int) { self.capacity = max(1, capacity) }

    /// The file for `servers`, if one is valid at `now`.
    public func file(for servers: [String], at now: WallTime) -> PredictedOrbitFile? {
        files.last { $0.servers == servers && $0.isValid(at: now) }
    }

    /// Keeps `file`, replacing the one for the same servers; files past their expiry at `now` are dropped.
    public mutating func store(_ file: PredictedOrbitFile, now: WallTime) {
        files.removeAll { $0.servers == file.servers || !$0.isValid(at: now) }
        guard file.isValid(at: now), file.servers.count <= Self.maximumServers,
            ([file.source] + file.servers).allSatisfy(Self.isPlainURL)
        else { return }
        files.append(file)
        if files.count > capacity { files.removeFirst(files.count - capacity) }
    }

    /// The cache as text.
    public func serialized() -> String {
        var text = Self.header + "\n"
        for file in files {
            let fields =
                [String(file.downloaded.microseconds), String(file.expires.microseconds), file.source]
                + [Base64.encode(file.data)] + file.servers
            text += fields.joined(separator: " ") + "\n"
        }
        return text
    }

    /// Reads a cache written by ``serialized()``, keeping at most `capacity` files valid at `now`.
    public static func parse(_ text: String, now: WallTime, capacity: Int) throws(FormatError) -> PredictedOrbitCache {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.count > 1, lines.last?.isEmpty == true { lines.removeLast() }
        guard lines.first == Substring(header) else { throw FormatError(line: 1, problem: .missingHeader) }
        var cache = PredictedOrbitCache(capacity: capacity)
        for (offset, line) in lines.enumerated().dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            let number = offset + 1
            guard fields.count >= 5, fields.allSatisfy({ !$0.isEmpty }) else {
                throw FormatError(line: number, problem: .fieldCount)
            }
            guard let downloaded = Int64(fields[0]), let expires = Int64(fields[1]), downloaded <= expires,
                case (let span, let overflow) = expires.subtractingReportingOverflow(downloaded), !overflow,
                Duration.microseconds(span) <= PredictedOrbitValidity.maximumValidity
            else { throw FormatError(line: number, problem: .badTime) }
            guard let data = Base64.decode(fields[3]), !data.isEmpty, data.count <= PredictedOrbitFile.maximumSize
            else { throw FormatError(line: number, problem: .badData) }
            guard fields.count - 4 <= maximumServers else { throw FormatError(line: number, problem: .tooManyServers) }
            let urls = [fields[2]] + fields[4...]
            guard urls.allSatisfy(isPlainURL) else { throw FormatError(line: number, problem: .badURL) }
            cache.store(
                PredictedOrbitFile(
                    servers: Array(fields[4...]), source: fields[2], downloaded: WallTime(microseconds: downloaded),
                    expires: WallTime(microseconds: expires), data: data),
                now: now)
        }
        return cache
    }

    /// Whether `url` is an `http` or `https` URL of printable ASCII without spaces, of at most
    /// ``maximumURLLength`` bytes, as a line of the file holds.
    public static func isPlainURL(_ url: String) -> Bool {
        (url.hasPrefix("https://") || url.hasPrefix("http://")) && url.utf8.count <= maximumURLLength
            && url.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f }
    }
}

/// What is wrong with a line of a predicted-orbit cache.
public enum PredictedOrbitCacheProblem: Sendable, Equatable, CustomStringConvertible {
    /// The first line is not `predicted-orbits 1`.
    case missingHeader
    /// Fewer than five fields, or an empty one.
    case fieldCount
    /// A time that is not a number, an expiry before the download or more than 14 days after it.
    case badTime
    /// More than ``PredictedOrbitCache/maximumServers`` servers.
    case tooManyServers
    /// The file is not base64, or empty, or larger than ``PredictedOrbitFile/maximumSize``.
    case badData
    /// A URL that is not a plain `http` or `https` URL.
    case badURL

    public var description: String {
        switch self {
        case .missingHeader: "not a predicted-orbit cache (\(PredictedOrbitCache.header))"
        case .fieldCount: "expected the times, the source, the data and at least one server"
        case .badTime: "the download time or expiry is not a time, or the expiry is not within 14 days after it"
        case .tooManyServers: "more than \(PredictedOrbitCache.maximumServers) servers"
        case .badData: "the data is not base64 of 1 byte to 1 MiB"
        case .badURL: "a URL is not an http:// or https:// URL of at most \(PredictedOrbitCache.maximumURLLength) bytes"
        }
    }
}
