/// A GLib key file (the INI dialect of `geoclue.conf`), parsed from text.
///
/// The syntax follows GLib's `GKeyFile`:
/// * Lines end at `\n`; a `\r` before it is dropped, so CRLF files read the same.
/// * Leading whitespace is skipped. A line that is then empty or starts with `#` is a comment.
///   `;` does **not** start a comment, and `#` after a value is part of the value.
/// * `[name]` starts a group; spaces or tabs may follow the `]`, nothing else. The name is taken as written,
///   between the brackets. A group that appears twice is one group: the second header continues the first.
/// * `key=value` adds an entry to the current group. Whitespace around the key and the value is trimmed.
///   A key may carry a locale suffix, `Name[de]`. A key that appears twice in a group keeps the last value, as in
///   GLib, and is listed in ``duplicateKeys`` with both lines, so that the reader can warn.
/// * A key before the first group, or any other line, is an error that names the line, and so is a NUL character
///   anywhere (C would cut the value or the path there) and, for text given as bytes, invalid UTF-8.
///
/// Entries keep their raw text; the typed accessors (``string(_:in:)``, ``bool(_:in:)``, ...) convert it the
/// way GLib's `g_key_file_get_*` functions do and report a bad value with its file, line, group and key.
public struct KeyFile: Sendable, Equatable {
    /// One `key=value` line, after trimming.
    public struct Entry: Sendable, Equatable {
        /// The key, as written (including any `[locale]` suffix).
        public var key: String
        /// The raw value: everything after the first `=`, trimmed, with escapes not yet interpreted.
        public var value: String
        /// The 1-based line the value came from (the last one, when the key appears more than once; see
        /// ``KeyFile/duplicateKeys``).
        public var line: Int

        /// Makes an entry.
        public init(key: String, value: String, line: Int) {
            self.key = key
            self.value = value
            self.line = line
        }
    }

    /// One `[group]` and its entries.
    public struct Group: Sendable, Equatable {
        /// The group name, as written between the brackets.
        public let name: String
        /// The 1-based line of the group's first header.
        public let line: Int
        /// The entries in the order their keys first appeared; a repeated key holds its last value and line.
        public private(set) var entries: [Entry] = []
        private var index: [String: Int] = [:]

        init(name: String, line: Int) {
            self.name = name
            self.line = line
        }

        /// The entry for `key`, if the group has one.
        public func entry(_ key: String) -> Entry? {
            index[key].map { entries[$0] }
        }

        /// Adds `entry`, or replaces the entry with the same key in place, returning the line of the one replaced.
        mutating func set(_ entry: Entry) -> Int? {
            if let position = index[entry.key] {
                let replaced = entries[position].line
                entries[position] = entry
                return replaced
            }
            index[entry.key] = entries.count
            entries.append(entry)
            return nil
        }
    }

    /// The file name used in error messages.
    public let file: String
    /// The groups in the order they first appeared.
    public private(set) var groups: [Group] = []
    /// The keys given more than once in a group, in the order of their repetitions.
    public private(set) var duplicateKeys: [DuplicateKey] = []
    private var index: [String: Int] = [:]

    /// A key given again in the same group: the later value holds.
    public struct DuplicateKey: Sendable, Equatable, CustomStringConvertible {
        /// The file name given to the parser.
        public var file: String
        /// The group.
        public var group: String
        /// The key.
        public var key: String
        /// The 1-based line of the value replaced.
        public var earlierLine: Int
        /// The 1-based line of the value that holds.
        public var line: Int

        /// `<file>:<line>: key '<key>' in [<group>]: given again; this value replaces the one on line N`.
        public var description: String {
            locatedMessage(
                file: file, line: line, group: group, key: key,
                problem: "given again; this value replaces the one on line \(earlierLine)")
        }
    }

    /// Parses `bytes`, which must be UTF-8 text; `file` names the source in errors, which name the first line that
    /// is not UTF-8.
    public init(parsing bytes: [UInt8], file: String) throws(KeyFileError) {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            // A newline byte is never part of a longer UTF-8 sequence, so each line can be checked alone.
            let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            let bad = lines.firstIndex { String(validating: $0, as: UTF8.self) == nil } ?? 0
            throw KeyFileError(file: file, line: bad + 1, problem: .invalidUTF8)
        }
        try self.init(parsing: text, file: file)
    }

    /// Parses `text`; `file` names the source in errors.
    public init(parsing text: String, file: String) throws(KeyFileError) {
        self.file = file
        var current: Int?
        for (offset, rawLine) in splitLines(text).enumerated() {
            let lineNumber = offset + 1
            guard !rawLine.utf8.contains(0) else {
                throw KeyFileError(file: file, line: lineNumber, problem: .nulCharacter)
            }
            let line = trimmingLeadingASCIIWhitespace(rawLine)
            guard let first = line.utf8.first, first != UInt8(ascii: "#") else { continue }
            if first == UInt8(ascii: "[") {
                current = try openGroup(header: line, line: lineNumber)
            } else if let equals = line.utf8.firstIndex(of: UInt8(ascii: "=")), equals != line.utf8.startIndex {
                let key = String(trimmingASCIIWhitespace(Substring(line.utf8[..<equals])))
                let value = String(trimmingASCIIWhitespace(Substring(line.utf8[line.utf8.index(after: equals)...])))
                guard let group = current else {
                    throw KeyFileError(file: file, line: lineNumber, key: key, problem: .keyOutsideGroup)
                }
                guard isValidKeyName(key) else {
                    throw KeyFileError(
                        file: file, line: lineNumber, group: groups[group].name, key: key, problem: .invalidKeyName)
                }
                if let earlier = groups[group].set(Entry(key: key, value: value, line: lineNumber)) {
                    duplicateKeys.append(
                        DuplicateKey(
                            file: file, group: groups[group].name, key: key, earlierLine: earlier, line: lineNumber))
                }
            } else {
                throw KeyFileError(file: file, line: lineNumber, problem: .malformedLine(String(line)))
            }
        }
    }

    /// Parses a `[name]` header line (leading whitespace already skipped) and makes its group current.
    private mutating func openGroup(header: Substring, line: Int) throws(KeyFileError) -> Int {
        let bytes = header.utf8
        guard let close = bytes.firstIndex(of: UInt8(ascii: "]")),
            bytes[bytes.index(after: close)...].allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") })
        else {
            throw KeyFileError(file: file, line: line, problem: .malformedGroupHeader(String(header)))
        }
        let name = String(Substring(bytes[bytes.index(after: bytes.startIndex)..<close]))
        guard !name.isEmpty,
            !name.unicodeScalars.contains(where: { $0 == "[" || $0.properties.generalCategory == .control })
        else {
            throw KeyFileError(file: file, line: line, group: name, problem: .invalidGroupName)
        }
        if let existing = index[name] { return existing }
        index[name] = groups.count
        groups.append(Group(name: name, line: line))
        return groups.count - 1
    }

    /// The group called `name`, if the file has one.
    public func group(_ name: String) -> Group? {
        index[name].map { groups[$0] }
    }

    /// The entry for `key` in `group`, if there is one.
    public func entry(_ key: String, in group: String) -> Entry? {
        self.group(group)?.entry(key)
    }

    /// The value of `key` in `group` as a string, with GLib's escapes (`\s \n \t \r \\`) interpreted;
    /// `nil` when the key is absent.
    public func string(_ key: String, in group: String) throws(KeyFileError) -> String? {
        guard let entry = entry(key, in: group) else { return nil }
        return try unescape(Substring(entry.value), entry: entry, group: group, inList: false)
    }

    /// The value of `key` in `group` as a `;`-separated list, as GLib's `g_key_file_get_string_list` reads it:
    /// a trailing `;` ends the list without adding an empty item, `\;` is a literal `;`, and the other escapes
    /// are those of ``string(_:in:)``. Unlike GLib, whitespace around each item is trimmed. An empty value is an
    /// empty list; `nil` when the key is absent.
    public func stringList(_ key: String, in group: String) throws(KeyFileError) -> [String]? {
        guard let entry = entry(key, in: group) else { return nil }
        var items: [String] = []
        for piece in splitList(entry.value) {
            items.append(try unescape(trimmingASCIIWhitespace(piece), entry: entry, group: group, inList: true))
        }
        return items
    }

    /// The value of `key` in `group` as a boolean: `true` or `1`, `false` or `0`, case-sensitive as in GLib;
    /// `nil` when the key is absent.
    public func bool(_ key: String, in group: String) throws(KeyFileError) -> Bool? {
        guard let entry = entry(key, in: group) else { return nil }
        switch entry.value {
        case "true", "1": return true
        case "false", "0": return false
        default: throw invalidValue(entry, group: group, expected: "a boolean (true or false)")
        }
    }

    /// The value of `key` in `group` as a decimal integer that fits `T`; `nil` when the key is absent.
    public func integer<T: FixedWidthInteger>(_ key: String, in group: String, as type: T.Type) throws(KeyFileError)
        -> T?
    {
        guard let entry = entry(key, in: group) else { return nil }
        guard let value = T(entry.value, radix: 10) else {
            throw invalidValue(entry, group: group, expected: integerDescription(T.self))
        }
        return value
    }

    /// The value of `key` in `group` as a `;`-separated list of decimal integers that fit `T` (list syntax as in
    /// ``stringList(_:in:)``); `nil` when the key is absent.
    public func integerList<T: FixedWidthInteger>(_ key: String, in group: String, as type: T.Type)
        throws(KeyFileError) -> [T]?
    {
        guard let entry = entry(key, in: group), let items = try stringList(key, in: group) else { return nil }
        var values: [T] = []
        for item in items {
            guard let value = T(item, radix: 10) else {
                let expected = integerDescription(T.self) + " (as every list item must be)"
                throw KeyFileError(
                    file: file, line: entry.line, group: group, key: key,
                    problem: .invalidValue(value: item, expected: expected))
            }
            values.append(value)
        }
        return values
    }

    /// The value of `key` in `group` as a decimal floating-point number; `nil` when the key is absent.
    ///
    /// Non-finite spellings such as `nan` or `inf` are returned as such; callers check the range they need.
    public func double(_ key: String, in group: String) throws(KeyFileError) -> Double? {
        guard let entry = entry(key, in: group) else { return nil }
        guard let value = Double(entry.value) else { throw invalidValue(entry, group: group, expected: "a number") }
        return value
    }

    private func invalidValue(_ entry: Entry, group: String, expected: String) -> KeyFileError {
        KeyFileError(
            file: file, line: entry.line, group: group, key: entry.key,
            problem: .invalidValue(value: entry.value, expected: expected))
    }

    /// Interprets GLib's escapes in `raw`; `\;` is accepted only inside a list item.
    private func unescape(_ raw: Substring, entry: Entry, group: String, inList: Bool) throws(KeyFileError)
        -> String
    {
        guard raw.utf8.contains(UInt8(ascii: "\\")) else { return String(raw) }
        var result = ""
        var scalars = raw.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            guard scalar == "\\" else {
                result.unicodeScalars.append(scalar)
                continue
            }
            let escaped = scalars.next()
            switch escaped {
            case "s"?: result += " "
            case "n"?: result += "\n"
            case "t"?: result += "\t"
            case "r"?: result += "\r"
            case "\\"?: result += "\\"
            case ";"? where inList: result += ";"
            default:
                let sequence = escaped.map { "\\" + String(Character($0)) } ?? "\\"
                throw KeyFileError(
                    file: file, line: entry.line, group: group, key: entry.key, problem: .invalidEscape(sequence))
            }
        }
        return result
    }
}

/// Why a key file was refused, and where: `<file>:<line>: key '<key>' in [<group>]: <problem>`.
public typealias KeyFileError = LocatedError<KeyFileProblem>

/// What is wrong with a key file.
public enum KeyFileProblem: Sendable, Equatable, CustomStringConvertible {
    /// A `key=value` line comes before the first `[group]` header.
    case keyOutsideGroup
    /// The line (given, after leading whitespace) is not a group header, a key-value pair, a comment or blank.
    case malformedLine(String)
    /// The line starts with `[` but is not `[name]` followed only by spaces or tabs.
    case malformedGroupHeader(String)
    /// The group name is empty or contains `[` or a control character.
    case invalidGroupName
    /// The key contains `[` or `]` other than as a `[locale]` suffix.
    case invalidKeyName
    /// The value uses an escape sequence GLib does not define (or a lone `\` at the end).
    case invalidEscape(String)
    /// The value cannot be read as the type asked for; `expected` describes that type.
    case invalidValue(value: String, expected: String)
    /// The line holds a NUL character.
    case nulCharacter
    /// The line is not valid UTF-8.
    case invalidUTF8

    /// A human explanation.
    public var description: String {
        switch self {
        case .keyOutsideGroup:
            "key-value pair before the first [group] header"
        case .malformedLine(let text):
            "\(quoted(text)) is not a [group] header, a key=value pair or a # comment"
        case .malformedGroupHeader(let text):
            "\(quoted(text)) is not a group header: expected [name] with nothing after the ']'"
        case .invalidGroupName:
            "group name must not be empty or contain '[' or control characters"
        case .invalidKeyName:
            "key name must not contain '[' or ']' except in a [locale] suffix"
        case .invalidEscape(let sequence):
            "invalid escape sequence \(quoted(sequence)); GLib knows \\s \\n \\t \\r \\\\ and, in lists, \\;"
        case .invalidValue(let value, let expected):
            "\(quoted(value)) is not \(expected)"
        case .nulCharacter:
            "the line holds a NUL character"
        case .invalidUTF8:
            "the line is not valid UTF-8"
        }
    }
}

// MARK: - Text helpers shared by the configuration parsers

/// `text` in single quotes, cut to 60 characters so that a huge value does not flood a log.
func quoted(_ text: String) -> String {
    let limit = 60
    var count = 0
    var end = text.startIndex
    while end < text.endIndex, count < limit {
        text.formIndex(after: &end)
        count += 1
    }
    return end == text.endIndex ? "'\(text)'" : "'\(text[..<end])…'"
}

/// The lines of `text`, split at `\n` with one trailing `\r` dropped from each, as GLib reads them.
///
/// Text that ends with `\n` yields a last, empty line.
func splitLines(_ text: String) -> [Substring] {
    text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
        Substring(line.last == UInt8(ascii: "\r") ? line.dropLast() : line)
    }
}

/// GLib's `g_ascii_isspace`: space, tab, newline, vertical tab, form feed, carriage return.
private func isASCIIWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || (0x09...0x0D).contains(byte)
}

/// `text` without the ASCII whitespace at its start.
func trimmingLeadingASCIIWhitespace(_ text: Substring) -> Substring {
    Substring(text.utf8.drop(while: isASCIIWhitespace))
}

/// `text` without the ASCII whitespace at either end.
func trimmingASCIIWhitespace(_ text: Substring) -> Substring {
    let leading = text.utf8.drop(while: isASCIIWhitespace)
    guard let last = leading.lastIndex(where: { !isASCIIWhitespace($0) }) else { return Substring(leading.prefix(0)) }
    return Substring(leading[...last])
}

/// Splits a raw list value at each `;` not escaped by `\`; an empty last piece (a trailing `;`) is dropped.
private func splitList(_ value: String) -> [Substring] {
    var pieces: [Substring] = []
    let bytes = value.utf8
    var start = bytes.startIndex
    var position = bytes.startIndex
    while position < bytes.endIndex {
        let byte = bytes[position]
        if byte == UInt8(ascii: "\\") {
            bytes.formIndex(after: &position)
            if position == bytes.endIndex { break }
        } else if byte == UInt8(ascii: ";") {
            pieces.append(Substring(bytes[start..<position]))
            start = bytes.index(after: position)
        }
        bytes.formIndex(after: &position)
    }
    if start < bytes.endIndex { pieces.append(Substring(bytes[start...])) }
    return pieces
}

/// GLib's key-name rule: no `=`, `[` or `]`, except one trailing `[locale]` of letters, digits and `-_.@`.
private func isValidKeyName(_ key: String) -> Bool {
    guard let first = key.unicodeScalars.first, first != "[" else { return false }
    guard let open = key.unicodeScalars.firstIndex(of: "[") else { return !key.unicodeScalars.contains("]") }
    let base = key.unicodeScalars[..<open]
    let suffix = key.unicodeScalars[key.unicodeScalars.index(after: open)...]
    guard !base.contains("]"), suffix.last == "]" else { return false }
    return suffix.dropLast().allSatisfy { scalar in
        scalar.properties.isAlphabetic || scalar.properties.numericType != nil || "-_.@".unicodeScalars.contains(scalar)
    }
}

/// "an integer in 0...65535" and the like, for `T`'s range.
private func integerDescription<T: FixedWidthInteger>(_ type: T.Type) -> String {
    "an integer in \(T.min)...\(T.max)"
}
