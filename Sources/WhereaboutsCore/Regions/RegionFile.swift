/// The regions and the pending events as text, kept beside the grants:
///
///     # whereabouts regions 2
///     region	1000	org.example.Maps	verified	home	48.137	11.575	150.0	true	true	600	0	1700000000000000	inside	true	48.1371	11.5752	20.0	1700000030000000
///     event	1000	org.example.Maps	verified	home	inside	1700000030000000	48.1371	11.5752	20.0	1700000030000000
///
/// One record a line, fields separated by one tab. A `region` line: the owner (the user id, the app id, and
/// `verified` or `claimed`, ``RegionOwner/verified``), the region's id, its
/// centre's latitude and longitude in degrees, the radius watched in metres, notify-entry and notify-exit
/// (`true` or `false`), dwell in seconds and expires in Unix seconds (0: none, as on the bus), when it was added
/// (microseconds since 1970, for the undecided timeout), its phase (`undecided`, `unknown`, `inside`,
/// `dwelling` or `outside`), whether a fix has decided it since it was added (`true` or `false`: the first
/// decision is always reported), and the fix that decided the phase (latitude, longitude, accuracy in metres,
/// timestamp in microseconds; while inside its time is the entry's, from which the dwell time counts), or four
/// `-` while undecided or unknown. An `event` line, a pending event of the owner, oldest first: the owner,
/// region id, state, timestamp in microseconds and the fix as above (four `-` for unknown).
///
/// App and region ids are escaped: a backslash, tab, line feed or carriage return is written `\\`, `\t`, `\n`
/// or `\r`. Numbers are written so that they read back exactly. Regions are written by owner and id, events by
/// owner, and the text ends with a line break.
///
/// Each user's regions and events are kept in a file of their own (``serialize(_:)`` of a user's records), so that
/// one user's changes rewrite only that user's file and a file that cannot be read costs only its user's regions;
/// a file of the whole monitor is what versions before kept in one file, still read to move them into the users'.
///
/// Reading is strict: a line that is not valid (any field, a region breaking AddRegion's rules, a phase without
/// its fix, a duplicate, an owner past ``Region/limitPerOwner`` regions or ``RegionMonitor/pendingLimit`` events,
/// and in a user's file a line of another user, or the user past ``Region/limitPerUser`` regions or
/// ``RegionMonitor/pendingLimitPerUser`` events) refuses the whole file, naming the line. Regions whose expiry has
/// come are left out, which is no error. The writer never writes what the reader refuses: the monitor holds a user
/// to the same limits.
public enum RegionFile {
    /// The first line.
    public static let header = "# whereabouts regions 2"
    /// The first line of a file written before owners were verified, whose owners are all claimed.
    static let claimedOnlyHeader = "# whereabouts regions 1"
    /// The header's words before the version.
    private static let headerPrefix = "# whereabouts regions "

    /// The monitor's regions and pending events, of every user, as text (see the format above).
    public static func serialize(_ monitor: RegionMonitor) -> String {
        ([header] + monitor.keepingUsers.flatMap { lines(of: monitor.records(ofUser: $0)) }).joined(separator: "\n")
            + "\n"
    }

    /// One user's regions and pending events as the text of the user's own file.
    public static func serialize(_ records: RegionUserRecords) -> String {
        ([header] + lines(of: records)).joined(separator: "\n") + "\n"
    }

    /// The lines of `records`, regions before events.
    private static func lines(of records: RegionUserRecords) -> [String] {
        var lines: [String] = []
        for watch in records.watches {
            let region = watch.region
            let options = region.options
            lines.append(
                (["region"] + ownerFields(watch.owner, id: region.id)
                    + [
                        "\(region.latitude)", "\(region.longitude)", "\(region.radius)", "\(options.notifyEntry)",
                        "\(options.notifyExit)", "\(options.dwell?.components.seconds ?? 0)",
                        "\(options.expires?.seconds ?? 0)", "\(watch.added.microseconds)", watch.phase.rawValue,
                        "\(watch.decided)",
                    ] + fixFields(watch.fix)).joined(separator: "\t"))
        }
        for (owner, events) in records.pending {
            for event in events {
                lines.append(
                    (["event"] + ownerFields(owner, id: event.id)
                        + [event.state.rawValue, "\(event.timestamp.microseconds)"] + fixFields(event.fix))
                        .joined(separator: "\t"))
            }
        }
        return lines
    }

    /// Reads a text written by ``serialize(_:)`` of a monitor at `now`, or with `user`, one written by
    /// ``serialize(_:)`` of a user's records for that user; `file` names it in errors.
    ///
    /// - Throws: ``RegionFileError`` for the first line that is not valid.
    public static func parse(
        _ text: String, now: WallTime, file: String = "regions", user: UInt32? = nil
    ) throws(RegionFileError) -> RegionMonitor {
        var lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if lines.count > 1, lines.last?.isEmpty == true { lines.removeLast() }
        let first = Substring(lines[0])
        guard first == header || first == claimedOnlyHeader else {
            throw RegionFileError(
                file: file, line: 1,
                problem: first.hasPrefix(headerPrefix)
                    ? .unsupportedVersion(String(first.dropFirst(headerPrefix.count))) : .missingHeader)
        }
        var reader = Reader(now: now, ownersVerified: first == header, user: user)
        for (offset, line) in lines.enumerated().dropFirst() {
            do {
                try reader.read(line.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false))
            } catch {
                throw RegionFileError(file: file, line: offset + 1, problem: error)
            }
        }
        return reader.finished()
    }

    // MARK: - Writing

    private static func ownerFields(_ owner: RegionOwner, id: String) -> [String] {
        ["\(owner.user)", escaped(owner.app), owner.verified ? "verified" : "claimed", escaped(id)]
    }

    private static func fixFields(_ fix: RegionFix?) -> [String] {
        guard let fix else { return ["-", "-", "-", "-"] }
        return ["\(fix.latitude)", "\(fix.longitude)", "\(fix.accuracy)", "\(fix.timestamp.microseconds)"]
    }

    /// `text` with backslashes, tabs, line feeds and carriage returns escaped.
    static func escaped(_ text: String) -> String {
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): bytes += Array(#"\\"#.utf8)
            case UInt8(ascii: "\t"): bytes += Array(#"\t"#.utf8)
            case UInt8(ascii: "\n"): bytes += Array(#"\n"#.utf8)
            case UInt8(ascii: "\r"): bytes += Array(#"\r"#.utf8)
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: - Reading

    /// The lines read so far.
    private struct Reader {
        let now: WallTime
        var monitor = RegionMonitor()
        /// Every region read, also those left out as expired.
        var seen: Set<Key> = []
        var pending: [RegionOwner: [RegionEvent]] = [:]

        struct Key: Hashable {
            var owner: RegionOwner
            var id: String
        }

        /// True when owners carry their `verified` or `claimed` field, after the app (version 2).
        let ownersVerified: Bool
        /// Whether the owner of the line being read is verified.
        private var verified = false
        /// The user whose file this is, if it is one user's.
        let user: UInt32?
        /// The regions and events read, for a user's limits.
        private var regions = 0
        private var events = 0

        init(now: WallTime, ownersVerified: Bool, user: UInt32?) {
            self.now = now
            self.ownersVerified = ownersVerified
            self.user = user
        }

        /// Refuses a line of another user in a user's file.
        private func checkUser(_ owner: RegionOwner) throws(RegionFileProblem) {
            if let user, owner.user != user { throw .otherUser(owner.user) }
        }

        mutating func read(_ fields: [Substring.UTF8View]) throws(RegionFileProblem) {
            var fields = fields.map(Substring.init)
            guard fields != [""] else { throw .emptyLine }
            guard fields[0] == "region" || fields[0] == "event" else { throw .unknownLineKind(String(fields[0])) }
            verified = false
            if ownersVerified {
                // The owner's third field, read here and left out so that both versions read alike after it.
                let expected = fields[0] == "region" ? Self.regionFields + 1 : Self.eventFields + 1
                guard fields.count == expected else { throw .fieldCount(found: fields.count, expected: expected) }
                switch fields.remove(at: 3) {
                case "verified": verified = true
                case "claimed": verified = false
                case let other: throw .invalidField(name: "verified", value: String(other))
                }
            }
            if fields[0] == "region" { try readRegion(fields) } else { try readEvent(fields) }
        }

        /// The fields of a version 1 `region` line, and of an `event` line.
        static let regionFields = 18
        static let eventFields = 10

        func finished() -> RegionMonitor {
            var monitor = monitor
            for (owner, events) in pending { monitor.restorePending(events, for: owner) }
            return monitor
        }

        private mutating func readRegion(_ fields: [Substring]) throws(RegionFileProblem) {
            guard fields.count == Self.regionFields else {
                throw .fieldCount(found: fields.count, expected: Self.regionFields)
            }
            let (owner, id) = try RegionFile.owner(fields[1], fields[2], verified: verified, id: fields[3])
            try checkUser(owner)
            let latitude = try RegionFile.decimal(fields[4], "latitude")
            let longitude = try RegionFile.decimal(fields[5], "longitude")
            let radius = try RegionFile.decimal(fields[6], "radius")
            let options: [String: RegionOptionValue] = [
                "notify-entry": .bool(try RegionFile.flag(fields[7], "notify-entry")),
                "notify-exit": .bool(try RegionFile.flag(fields[8], "notify-exit")),
                "dwell": .uint32(try RegionFile.unsigned(fields[9], "dwell")),
                "expires": .uint64(try RegionFile.unsigned(fields[10], "expires")),
            ]
            let added = try RegionFile.time(fields[11], "added")
            guard let phase = RegionPhase(rawValue: String(fields[12])) else {
                throw .invalidField(name: "phase", value: String(fields[12]))
            }
            let decided = try RegionFile.flag(fields[13], "decided")
            let fix = try RegionFile.fix(fields[14...17])
            guard radius >= Region.minimumRadius else {
                throw .invalidRegion(
                    RegionArgumentError(
                        argument: "radius", description: "radius \(radius) is below \(Region.minimumRadius)"))
            }
            let region: Region
            do {
                region = try Region.validated(
                    id: id, latitude: latitude, longitude: longitude, radius: radius, options: options,
                    now: WallTime(microseconds: .min))
            } catch {
                throw .invalidRegion(error)
            }
            let consistent =
                switch phase {
                case .undecided: !decided && fix == nil
                case .unknown: fix == nil
                case .inside, .dwelling, .outside: decided && fix != nil
                }
            guard consistent else {
                throw .inconsistentState(
                    "a region \(phase.rawValue) \(decided ? "decided" : "never decided") by a fix "
                        + (fix == nil ? "without the fix" : "with a fix"))
            }
            guard seen.insert(Key(owner: owner, id: id)).inserted else { throw .duplicateRegion(id) }
            if let expires = region.options.expires, expires <= now { return }
            guard monitor.regionCount(of: owner) < Region.limitPerOwner else { throw .tooManyRegions(owner) }
            if let user {
                guard regions < Region.limitPerUser else { throw .tooManyRegionsOfUser(user) }
                regions += 1
            }
            monitor.restore(
                RegionWatch(owner: owner, region: region, phase: phase, decided: decided, fix: fix, added: added))
        }

        private mutating func readEvent(_ fields: [Substring]) throws(RegionFileProblem) {
            guard fields.count == Self.eventFields else {
                throw .fieldCount(found: fields.count, expected: Self.eventFields)
            }
            let (owner, id) = try RegionFile.owner(fields[1], fields[2], verified: verified, id: fields[3])
            try checkUser(owner)
            do {
                _ = try Region.validated(
                    id: id, latitude: 0, longitude: 0, radius: Region.minimumRadius, options: [:], now: now)
            } catch {
                throw .invalidRegion(error)
            }
            guard let state = RegionState(rawValue: String(fields[4])) else {
                throw .invalidField(name: "state", value: String(fields[4]))
            }
            let timestamp = try RegionFile.time(fields[5], "timestamp")
            let fix = try RegionFile.fix(fields[6...9])
            guard (state == .unknown) == (fix == nil) else {
                throw .inconsistentState(
                    state == .unknown ? "an unknown event has a fix" : "a \(state.rawValue) event has no fix")
            }
            guard pending[owner, default: []].count < RegionMonitor.pendingLimit else {
                throw .tooManyPendingEvents(owner)
            }
            if let user {
                guard events < RegionMonitor.pendingLimitPerUser else { throw .tooManyPendingEventsOfUser(user) }
                events += 1
            }
            pending[owner, default: []].append(
                RegionEvent(owner: owner, id: id, state: state, fix: fix, timestamp: timestamp))
        }
    }

    private static func owner(
        _ user: Substring, _ app: Substring, verified: Bool, id: Substring
    ) throws(RegionFileProblem) -> (RegionOwner, String) {
        let user: UInt32 = try unsigned(user, "user")
        guard let app = unescaped(app) else { throw .invalidField(name: "app", value: String(app)) }
        guard let id = unescaped(id) else { throw .invalidField(name: "id", value: String(id)) }
        return (RegionOwner(user: user, app: app, verified: verified), id)
    }

    /// Four fields of a fix, or four `-`.
    private static func fix(_ fields: ArraySlice<Substring>) throws(RegionFileProblem) -> RegionFix? {
        if fields.allSatisfy({ $0 == "-" }) { return nil }
        let start = fields.startIndex
        let fix = RegionFix(
            latitude: try decimal(fields[start], "fix latitude"),
            longitude: try decimal(fields[start + 1], "fix longitude"),
            accuracy: try decimal(fields[start + 2], "fix accuracy"), timestamp: try time(fields[start + 3], "fix time")
        )
        guard fix.isValid else { throw .inconsistentState("the fix is out of range") }
        return fix
    }

    private static func flag(_ text: Substring, _ name: String) throws(RegionFileProblem) -> Bool {
        switch text {
        case "true": true
        case "false": false
        default: throw .invalidField(name: name, value: String(text))
        }
    }

    /// Digits only.
    private static func unsigned<Number: FixedWidthInteger & UnsignedInteger>(
        _ text: Substring, _ name: String
    ) throws(RegionFileProblem) -> Number {
        guard !text.isEmpty, text.utf8.allSatisfy(isDigit), let value = Number(text) else {
            throw .invalidField(name: name, value: String(text))
        }
        return value
    }

    /// Microseconds since 1970: digits, perhaps after a minus.
    private static func time(_ text: Substring, _ name: String) throws(RegionFileProblem) -> WallTime {
        let digits = text.hasPrefix("-") ? text.dropFirst() : text
        guard !digits.isEmpty, digits.utf8.allSatisfy(isDigit), let value = Int64(text) else {
            throw .invalidField(name: name, value: String(text))
        }
        return WallTime(microseconds: value)
    }

    /// A finite decimal number (digits, sign, point and exponent only: no `nan`, `inf` or hex).
    private static func decimal(_ text: Substring, _ name: String) throws(RegionFileProblem) -> Double {
        let allowed = Set("0123456789+-.eE".utf8)
        guard !text.isEmpty, text.utf8.allSatisfy(allowed.contains), let value = Double(text), value.isFinite else {
            throw .invalidField(name: name, value: String(text))
        }
        return value
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    /// `text` with its escapes undone; nil for an unknown escape or a backslash at the end.
    static func unescaped(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var escaping = false
        for byte in text.utf8 {
            if escaping {
                switch byte {
                case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "t"): bytes.append(UInt8(ascii: "\t"))
                case UInt8(ascii: "n"): bytes.append(UInt8(ascii: "\n"))
                case UInt8(ascii: "r"): bytes.append(UInt8(ascii: "\r"))
                default: return nil
                }
                escaping = false
            } else if byte == UInt8(ascii: "\\") {
                escaping = true
            } else {
                bytes.append(byte)
            }
        }
        return escaping ? nil : String(decoding: bytes, as: UTF8.self)
    }
}
