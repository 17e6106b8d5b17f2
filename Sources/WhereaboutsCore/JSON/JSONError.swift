/// Why a text is not JSON, and where: ``JSONValue/parse(_:maximumDepth:)`` throws it.
///
/// Its ``description`` reads `at byte <offset>: <problem>`.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public enum Problem: Sendable, Equatable, CustomStringConvertible {
        /// The text ended where `expected` was due.
        case unexpectedEnd(expected: String)
        /// A byte that cannot stand here; `expected` says what could.
        case unexpectedByte(UInt8, expected: String)
        /// The bytes are not UTF-8 (an invalid, overlong, surrogate or truncated sequence).
        case invalidUTF8
        /// A control character (below U+0020) stands unescaped in a string.
        case controlCharacterInString(UInt8)
        /// A backslash followed by a byte that starts no escape.
        case invalidEscape(UInt8)
        /// `\u` not followed by four hex digits.
        case invalidUnicodeEscape
        /// A `\u` escape of a surrogate that is not half of a high-low pair.
        case unpairedSurrogate(UInt16)
        /// A number with a leading zero, such as `01`.
        case leadingZero
        /// A number too large for a `Double`.
        case numberOutOfRange
        /// An object that has this key twice.
        case duplicateKey(String)
        /// Arrays and objects nested deeper than the limit.
        case tooDeep(limit: Int)
        /// Something other than whitespace after the value.
        case trailingData

        /// A human explanation.
        public var description: String {
            switch self {
            case .unexpectedEnd(let expected): "the text ends where \(expected) was expected"
            case .unexpectedByte(let byte, let expected): "\(JSONError.show(byte)) where \(expected) was expected"
            case .invalidUTF8: "not UTF-8"
            case .controlCharacterInString(let byte): "unescaped control character \(JSONError.show(byte)) in a string"
            case .invalidEscape(let byte): "\\\(JSONError.show(byte)) is not an escape"
            case .invalidUnicodeEscape: "\\u is not followed by four hex digits"
            case .unpairedSurrogate(let unit): "unpaired surrogate \\u\(JSONError.hex(unit))"
            case .leadingZero: "a number may not start with 0 followed by a digit"
            case .numberOutOfRange: "the number is too large"
            case .duplicateKey(let key): "the object has the key \"\(key)\" twice"
            case .tooDeep(let limit): "arrays and objects nest deeper than \(limit)"
            case .trailingData: "more follows the value"
            }
        }
    }

    /// The 0-based offset of the byte where the problem was found.
    public var offset: Int
    /// What is wrong.
    public var problem: Problem

    /// Makes an error.
    public init(offset: Int, problem: Problem) {
        self.offset = offset
        self.problem = problem
    }

    /// `at byte <offset>: <problem>`.
    public var description: String { "at byte \(offset): \(problem)" }

    /// A printable ASCII byte in quotes, anything else as `0xNN`.
    static func show(_ byte: UInt8) -> String {
        (0x21...0x7e).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "0x" + hex(UInt16(byte), digits: 2)
    }

    /// `value` as upper-case hex, zero-padded to `digits`.
    static func hex(_ value: UInt16, digits: Int = 4) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
