/// A JSON value (RFC 8259), as the Ichnaea API exchanges them.
///
/// Numbers are `Double`s, as in JavaScript; the Ichnaea API carries nothing that needs more (coordinates, metres,
/// dBm, milliseconds since 1970 are all exact below 2^53). Objects are dictionaries: member order carries no
/// meaning in JSON, and ``serialized`` writes members sorted by key so the same value is always the same text.
///
/// ``parse(_:maximumDepth:)`` reads JSON text strictly; ``serialized`` writes it.
public enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number; never NaN or infinite when parsed (``serialized`` writes a non-finite one as `null`).
    case number(Double)
    /// A string of Unicode scalars.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object; its members' keys are unique.
    case object([String: JSONValue])

    /// Parses `bytes` as one JSON text, strictly by RFC 8259.
    ///
    /// * The bytes must be UTF-8; overlong forms, encoded surrogates and anything past U+10FFFF are refused.
    ///   A byte order mark is refused too (RFC 8259 §8.1: senders must not add one).
    /// * Whitespace is space, tab, line feed and carriage return only; nothing but whitespace may follow the value.
    /// * Strings may not hold control characters below U+0020 unescaped; escapes are the eight of RFC 8259 and
    ///   `\u` with four hex digits, where a surrogate must be a high one followed at once by an escaped low one.
    /// * Numbers follow the JSON grammar: no `+`, no leading zeros, no `.5` or `5.`, no `NaN` or `Infinity`; one
    ///   too large for a `Double` is refused (one too small becomes zero).
    /// * An object may not repeat a key (RFC 8259 leaves the meaning open; two readers could disagree).
    /// * Arrays and objects may nest `maximumDepth` deep, no deeper: 0 allows only a scalar, 1 a flat array or
    ///   object. A limit above ``depthLimit`` counts as ``depthLimit``: the parser keeps its own stack, but
    ///   comparing and releasing a value recurse through its nesting, so no value may be deep enough to exhaust
    ///   the thread's stack.
    ///
    /// - Throws: ``JSONError`` saying what is wrong and at which byte offset.
    public static func parse(_ bytes: [UInt8], maximumDepth: Int = 32) throws(JSONError) -> JSONValue {
        var parser = JSONParser(bytes: bytes, maximumDepth: min(maximumDepth, depthLimit))
        return try parser.parseDocument()
    }

    /// The deepest nesting ``parse(_:maximumDepth:)`` ever allows.
    public static let depthLimit = 512

    /// The member named `key` when this is an object that has one; nil otherwise.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// The number, when this is one.
    public var numberValue: Double? {
        guard case .number(let value) = self else { return nil }
        return value
    }

    /// The string, when this is one.
    public var stringValue: String? {
        guard case .string(let value) = self else { return nil }
        return value
    }

    /// The Boolean, when this is one.
    public var boolValue: Bool? {
        guard case .bool(let value) = self else { return nil }
        return value
    }

    /// The elements, when this is an array.
    public var arrayValue: [JSONValue]? {
        guard case .array(let value) = self else { return nil }
        return value
    }

    /// The members, when this is an object.
    public var objectValue: [String: JSONValue]? {
        guard case .object(let value) = self else { return nil }
        return value
    }

    /// True for `null`.
    public var isNull: Bool { self == .null }

    /// The name of this value's JSON type ("null", "a Boolean", "a number", "a string", "an array", "an object"),
    /// for messages that say what was found instead of what was expected.
    public var typeDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a Boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
