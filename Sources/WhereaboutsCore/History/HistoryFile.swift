/// One user's history as text, kept in that user's own file:
///
///     # whereabouts history 1
///     use	1700000000000000	1700000600000000	flatpak:org.gnome.Maps	8	exact	gpsd,wifi
///     lookup	1700000001000000	wifi	api.beacondb.net	12	1	position	35.0	flatpak:org.gnome.Maps
///
/// One entry a line, oldest first, fields separated by one tab, every line ending with a line feed. A `use` line:
/// when the use started and stopped (microseconds since 1970), the app (``AppUse/app``), the finest level it was
/// served at (GeoClue's number: 1 country, 4 city, 5 neighbourhood, 6 street, 8 exact), `approximate` or
/// `exact`, and the providers' kinds separated by commas (`-` for none). A `lookup` line: when it ended, its
/// kind (``LookupKind``), the service's host, how many access points and cells it carried, its outcome
/// (``LookupOutcome/word``), the accuracy in metres of a position (`-` otherwise) and then one field for each app
/// that needed it (none to ``maximumLookupApps``). Apps and hosts are escaped as in ``RegionFile``.
///
/// The file grows by whole lines appended at its end, and is rewritten whole when lines expired or were dropped
/// (``HistoryBook``). Reading is strict: a line that is not valid refuses the whole file, naming the line, except
/// a last line without its line feed, which a crash in the middle of an append leaves: it is dropped
/// (``Content/tornLine``). Lines older than ``HistoryBook/maximumAge`` are left out, which is no error. A file
/// never holds more than ``maximumLines`` lines of at most ``maximumLineBytes`` bytes, so ``fileSizeLimit``
/// bounds what the reader accepts and what the writer ever writes.
public enum HistoryFile {
    /// The first line.
    public static let header = "# whereabouts history 1"
    /// The longest app or host kept, in bytes of UTF-8 before escaping: a `DesktopId` (255 bytes) with its
    /// identity's prefix fits.
    public static let maximumTextBytes = 272
    /// The most apps a lookup names; more are left out (a lookup a user's many apps needed at once).
    public static let maximumLookupApps = 4
    /// The longest line, line feed included: a lookup naming ``maximumLookupApps`` apps, each and the host at
    /// ``maximumTextBytes`` with every byte escaped, is below it.
    public static let maximumLineBytes = 3 << 10
    /// The most lines a file holds: a user's ``HistoryBook/limitPerUser`` entries and the
    /// ``HistoryBook/rewriteMargin`` lines dropped since it was last rewritten.
    public static let maximumLines = HistoryBook.limitPerUser + HistoryBook.rewriteMargin
    /// The largest file read: ``maximumLines`` of ``maximumLineBytes`` and the header.
    public static let fileSizeLimit = maximumLines * maximumLineBytes + header.utf8.count + 1

    /// What a file holds.
    public struct Content: Sendable, Equatable {
        /// The entries not expired, in the file's order.
        public var entries: [HistoryEntry] = []
        /// How many entry lines the file holds, expired ones included (the torn line not).
        public var lines = 0
        /// When its oldest line ended, expired or not.
        public var oldestLine: WallTime?
        /// True when its last line had no line feed and was dropped.
        public var tornLine = false
    }

    /// The text of a file holding `entries` (``header`` and their lines).
    public static func serialize(_ entries: some Sequence<HistoryEntry>) -> String {
        header + "\n" + lines(of: entries)
    }

    /// The lines of `entries`, each ending with a line feed, to be appended to a file.
    public static func lines(of entries: some Sequence<HistoryEntry>) -> String {
        var text = ""
        for entry in entries {
            text += line(of: entry)
            text += "\n"
        }
        return text
    }

    /// `text` cut to at most ``maximumTextBytes`` bytes of UTF-8, at a character's boundary.
    static func bounded(_ text: String) -> String {
        guard text.utf8.count > maximumTextBytes else { return text }
        var kept = ""
        var bytes = 0
        for scalar in text.unicodeScalars {
            bytes += scalar.utf8.count
            guard bytes <= maximumTextBytes else { break }
            kept.unicodeScalars.append(scalar)
        }
        return kept
    }

    private static func line(of entry: HistoryEntry) -> String {
        switch entry {
        case .use(let use):
            let providers = use.providers.isEmpty ? "-" : use.providers.map(\.rawValue).joined(separator: ",")
            return [
                "use", "\(use.started.microseconds)", "\((use.stopped ?? use.started).microseconds)",
                RegionFile.escaped(use.app), "\(use.level.rawValue)", use.approximate ? "approximate" : "exact",
                providers,
            ].joined(separator: "\t")
        case .lookup(let lookup):
            return
                ([
                    "lookup", "\(lookup.time.microseconds)", lookup.kind.rawValue, RegionFile.escaped(lookup.host),
                    "\(lookup.accessPoints)", "\(lookup.cells)", lookup.outcome.word,
                    lookup.outcome.accuracy.map { "\($0)" } ?? "-",
                ] + lookup.apps.map(RegionFile.escaped)).joined(separator: "\t")
        }
    }

    /// Reads a text written by ``serialize(_:)`` and appended to with ``lines(of:)``, at `now`; `file` names it in
    /// errors.
    ///
    /// - Throws: ``HistoryFileError`` for the first line that is not valid.
    public static func parse(_ text: String, now: WallTime, file: String = "history") throws(HistoryFileError)
        -> Content
    {
        var lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        var content = Content()
        // What follows the last line feed: nothing in a whole file, a torn line after a crash.
        if let last = lines.popLast(), !last.isEmpty { content.tornLine = true }
        guard let first = lines.first, Substring(first) == header else {
            throw HistoryFileError(file: file, line: 1, problem: .missingHeader)
        }
        guard lines.count - 1 <= maximumLines else {
            throw HistoryFileError(file: file, line: maximumLines + 2, problem: .tooManyLines)
        }
        var reader = Reader(oldestKept: now.advanced(by: .zero - HistoryBook.maximumAge))
        for (offset, line) in lines.enumerated().dropFirst() {
            do throws(HistoryFileProblem) {
                guard line.count < maximumLineBytes else { throw HistoryFileProblem.lineTooLong }
                if let entry = try reader.read(
                    line.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false))
                {
                    content.entries.append(entry)
                }
            } catch {
                throw HistoryFileError(file: file, line: offset + 1, problem: error)
            }
        }
        content.lines = lines.count - 1
        content.oldestLine = reader.oldestLine
        return content
    }

    /// The lines read so far.
    private struct Reader {
        /// Lines that ended before this are left out.
        let oldestKept: WallTime
        private(set) var oldestLine: WallTime?
        /// Each app and host read, so that the entries share one copy of each.
        private var texts: [String: String] = [:]

        init(oldestKept: WallTime) { self.oldestKept = oldestKept }

        /// The entry of a line, nil when it expired.
        mutating func read(_ fields: [Substring.UTF8View]) throws(HistoryFileProblem) -> HistoryEntry? {
            let fields = fields.map(Substring.init)
            let entry: HistoryEntry
            switch fields[0] {
            case "use": entry = try use(fields)
            case "lookup": entry = try lookup(fields)
            case "": throw .emptyLine
            case let other: throw .unknownLineKind(String(other))
            }
            oldestLine = min(oldestLine ?? entry.time, entry.time)
            return entry.time < oldestKept ? nil : entry
        }

        private mutating func use(_ fields: [Substring]) throws(HistoryFileProblem) -> HistoryEntry {
            guard fields.count == 7 else { throw .fieldCount(found: fields.count, expected: 7) }
            let started = try time(fields[1], "started")
            let stopped = try time(fields[2], "stopped")
            guard stopped >= started else { throw .invalidField(name: "stopped", value: String(fields[2])) }
            let approximate: Bool
            switch fields[5] {
            case "approximate": approximate = true
            case "exact": approximate = false
            case let other: throw .invalidField(name: "approximate", value: String(other))
            }
            var providers: [ProviderKind] = []
            if fields[6] != "-" {
                for name in fields[6].split(separator: ",", omittingEmptySubsequences: false) {
                    guard let kind = ProviderKind(rawValue: String(name)) else {
                        throw .invalidField(name: "providers", value: String(fields[6]))
                    }
                    providers.append(kind)
                }
            }
            let use = AppUse(
                app: try text(fields[3], "app"), started: started, stopped: stopped, level: try level(fields[4]),
                approximate: approximate, providers: providers)
            guard use.providers == providers else { throw .invalidField(name: "providers", value: String(fields[6])) }
            return .use(use)
        }

        private mutating func lookup(_ fields: [Substring]) throws(HistoryFileProblem) -> HistoryEntry {
            guard (8...8 + maximumLookupApps).contains(fields.count) else {
                throw .fieldCount(found: fields.count, expected: 8)
            }
            guard let kind = LookupKind(rawValue: String(fields[2])) else {
                throw .invalidField(name: "kind", value: String(fields[2]))
            }
            let outcome: LookupOutcome
            switch (fields[6], fields[7]) {
            case ("position", let accuracy):
                guard let metres = Double(String(accuracy)), metres.isFinite, metres > 0 else {
                    throw .invalidField(name: "accuracy", value: String(accuracy))
                }
                outcome = .position(accuracy: metres)
            case ("not-found", "-"): outcome = .notFound
            case ("accepted", "-"): outcome = .accepted
            case ("failed", "-"): outcome = .failed
            case (let word, _): throw .invalidField(name: "outcome", value: "\(word) \(fields[7])")
            }
            var apps: [String] = []
            for field in fields[8...] { apps.append(try text(field, "app")) }
            let lookup = NetworkLookup(
                time: try time(fields[1], "time"), kind: kind, host: try text(fields[3], "host"),
                accessPoints: try count(fields[4], "access points"), cells: try count(fields[5], "cells"),
                outcome: outcome, apps: apps)
            guard lookup.apps == apps else { throw .invalidField(name: "apps", value: apps.joined(separator: ",")) }
            return .lookup(lookup)
        }

        /// An unescaped app or host, not empty and not longer than ``maximumTextBytes``, shared with the lines
        /// read before.
        private mutating func text(_ field: Substring, _ name: String) throws(HistoryFileProblem) -> String {
            guard let text = RegionFile.unescaped(field), !text.isEmpty, text.utf8.count <= maximumTextBytes else {
                throw .invalidField(name: name, value: String(field))
            }
            if let known = texts[text] { return known }
            texts[text] = text
            return text
        }

        private func time(_ field: Substring, _ name: String) throws(HistoryFileProblem) -> WallTime {
            WallTime(microseconds: Int64(try count(field, name)))
        }

        /// A decimal number without sign or leading zeros.
        private func count(_ field: Substring, _ name: String) throws(HistoryFileProblem) -> Int {
            guard field.utf8.allSatisfy({ (48...57).contains($0) }), field == "0" || !field.hasPrefix("0"),
                let value = Int64(field), let count = Int(exactly: value)
            else { throw .invalidField(name: name, value: String(field)) }
            return count
        }

        private func level(_ field: Substring) throws(HistoryFileProblem) -> AccuracyLevel {
            guard let raw = UInt32(field), let level = AccuracyLevel(rawValue: raw), level != .none else {
                throw .invalidField(name: "level", value: String(field))
            }
            return level
        }
    }
}
