/// Why a line is not a usable NMEA 0183 sentence.
public enum NMEAError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The line holds no characters.
    case empty
    /// The line is longer than ``NMEASentence/maximumLength`` (its length excludes the line terminator).
    case tooLong(length: Int, limit: Int)
    /// The line does not start with `$`.
    case missingStartDelimiter
    /// A byte that is not printable ASCII, or a `$` or `*` where none may be; `offset` counts from the `$`.
    case invalidCharacter(byte: UInt8, offset: Int)
    /// The line has no `*` before its checksum.
    case missingChecksum
    /// What follows the `*` is not exactly two hexadecimal digits.
    case malformedChecksum(String)
    /// The checksum in the line differs from the XOR of the bytes between `$` and `*`.
    case checksumMismatch(stated: UInt8, computed: UInt8)
    /// The address field (talker and sentence type, such as `GPGGA`) is malformed.
    case malformedAddress(String)
    /// The sentence has fewer fields than its type defines.
    case tooFewFields(sentence: String, count: Int, required: Int)
    /// A field that the sentence needs, given its other fields, is empty.
    case missingField(sentence: String, field: String)
    /// A field's value breaks its syntax or range.
    case invalidField(sentence: String, field: String, value: String)

    /// The problem in one line of English, for logs.
    public var description: String {
        switch self {
        case .empty:
            "empty line"
        case .tooLong(let length, let limit):
            "line of \(length) characters is longer than the \(limit) accepted"
        case .missingStartDelimiter:
            "line does not start with '$'"
        case .invalidCharacter(let byte, let offset):
            "invalid character 0x\(hex(byte)) at offset \(offset)"
        case .missingChecksum:
            "no '*' checksum"
        case .malformedChecksum(let text):
            "checksum '\(text)' is not two hexadecimal digits at the end of the line"
        case .checksumMismatch(let stated, let computed):
            "checksum mismatch: line says \(hex(stated)), content gives \(hex(computed))"
        case .malformedAddress(let address):
            "malformed address field '\(address)'"
        case .tooFewFields(let sentence, let count, let required):
            "\(sentence) sentence has \(count) fields, needs \(required)"
        case .missingField(let sentence, let field):
            "\(sentence) sentence lacks its \(field)"
        case .invalidField(let sentence, let field, let value):
            "\(sentence) sentence has invalid \(field) '\(value)'"
        }
    }
}

/// Two uppercase hexadecimal digits.
private func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}
