/// The strict RFC 8259 reader behind ``JSONValue/parse(_:maximumDepth:)``.
///
/// It keeps open arrays and objects on a stack of its own rather than recursing, so reading never needs more of
/// the thread's stack however deep the input nests before the limit stops it.
struct JSONParser {
    /// An array or object whose closing bracket has not been read yet.
    private enum OpenContainer {
        /// An array and the elements read so far.
        case array([JSONValue])
        /// An object, the members read so far, and the key (with its offset) whose value is being read.
        case object([String: JSONValue], key: String, keyOffset: Int)
    }

    private let bytes: [UInt8]
    private let maximumDepth: Int
    private var position = 0

    init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = max(0, maximumDepth)
    }

    /// Reads the whole text as one value followed by nothing but whitespace.
    mutating func parseDocument() throws(JSONError) -> JSONValue {
        let value = try parseValue()
        skipWhitespace()
        guard position == bytes.count else { throw JSONError(offset: position, problem: .trailingData) }
        return value
    }

    // MARK: - Structure

    private mutating func parseValue() throws(JSONError) -> JSONValue {
        var stack: [OpenContainer] = []
        while true {
            // Read the start of a value: a scalar, an empty container, or the opening of one whose first element
            // or member is read on the next turn.
            skipWhitespace()
            guard position < bytes.count else { throw end(expected: "a value") }
            var value: JSONValue
            switch bytes[position] {
            case UInt8(ascii: "["):
                try open(depth: stack.count)
                skipWhitespace()
                if peek(UInt8(ascii: "]")) {
                    position += 1
                    value = .array([])
                } else {
                    stack.append(.array([]))
                    continue
                }
            case UInt8(ascii: "{"):
                try open(depth: stack.count)
                skipWhitespace()
                if peek(UInt8(ascii: "}")) {
                    position += 1
                    value = .object([:])
                } else {
                    let (key, keyOffset) = try parseKey()
                    stack.append(.object([:], key: key, keyOffset: keyOffset))
                    continue
                }
            default:
                value = try parseScalar()
            }

            // Hand the finished value to the container it belongs in; close containers that end here.
            while true {
                guard let container = stack.popLast() else { return value }
                skipWhitespace()
                switch container {
                case .array(var elements):
                    elements.append(value)
                    if try separatorOrEnd(closing: UInt8(ascii: "]"), expected: "',' or ']'") {
                        value = .array(elements)
                        continue
                    }
                    stack.append(.array(elements))
                case .object(var members, let key, let keyOffset):
                    guard members.updateValue(value, forKey: key) == nil else {
                        throw JSONError(offset: keyOffset, problem: .duplicateKey(key))
                    }
                    if try separatorOrEnd(closing: UInt8(ascii: "}"), expected: "',' or '}'") {
                        value = .object(members)
                        continue
                    }
                    skipWhitespace()
                    let (nextKey, nextOffset) = try parseKey()
                    stack.append(.object(members, key: nextKey, keyOffset: nextOffset))
                }
                break
            }
        }
    }

    /// Steps over an opening bracket at `depth` open containers, unless that nests too deep.
    private mutating func open(depth: Int) throws(JSONError) {
        guard depth < maximumDepth else { throw JSONError(offset: position, problem: .tooDeep(limit: maximumDepth)) }
        position += 1
    }

    /// Reads `,` (false: another element follows) or `closing` (true: the container ends).
    private mutating func separatorOrEnd(closing: UInt8, expected: String) throws(JSONError) -> Bool {
        guard position < bytes.count else { throw end(expected: expected) }
        switch bytes[position] {
        case UInt8(ascii: ","):
            position += 1
            return false
        case closing:
            position += 1
            return true
        default:
            throw unexpected(expected: expected)
        }
    }

    /// Reads `"key"` and the `:` after it; returns the key and the offset of its opening quote.
    private mutating func parseKey() throws(JSONError) -> (String, Int) {
        let offset = position
        guard position < bytes.count else { throw end(expected: "a string key") }
        guard bytes[position] == UInt8(ascii: "\"") else { throw unexpected(expected: "a string key") }
        let key = try parseString()
        skipWhitespace()
        guard position < bytes.count else { throw end(expected: "':'") }
        guard bytes[position] == UInt8(ascii: ":") else { throw unexpected(expected: "':'") }
        position += 1
        return (key, offset)
    }

    // MARK: - Scalars

    private mutating func parseScalar() throws(JSONError) -> JSONValue {
        switch bytes[position] {
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw unexpected(expected: "a value")
        }
    }

    private mutating func literal(_ expected: String) throws(JSONError) {
        for byte in expected.utf8 {
            guard position < bytes.count else { throw end(expected: "'\(expected)'") }
            guard bytes[position] == byte else { throw unexpected(expected: "'\(expected)'") }
            position += 1
        }
    }

    /// Reads `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func parseNumber() throws(JSONError) -> Double {
        let start = position
        if peek(UInt8(ascii: "-")) { position += 1 }
        guard position < bytes.count else { throw end(expected: "a digit") }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if position < bytes.count, isDigit(bytes[position]) {
                throw JSONError(offset: position - 1, problem: .leadingZero)
            }
        } else {
            try digits()
        }
        if peek(UInt8(ascii: ".")) {
            position += 1
            try digits()
        }
        if peek(UInt8(ascii: "e")) || peek(UInt8(ascii: "E")) {
            position += 1
            if peek(UInt8(ascii: "+")) || peek(UInt8(ascii: "-")) { position += 1 }
            try digits()
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONError(offset: start, problem: .numberOutOfRange)
        }
        return value
    }

    /// Reads one or more decimal digits.
    private mutating func digits() throws(JSONError) {
        guard position < bytes.count else { throw end(expected: "a digit") }
        guard isDigit(bytes[position]) else { throw unexpected(expected: "a digit") }
        while position < bytes.count, isDigit(bytes[position]) { position += 1 }
    }

    /// Reads a string from its opening quote to just past its closing one.
    private mutating func parseString() throws(JSONError) -> String {
        position += 1
        var utf8: [UInt8] = []
        while true {
            guard position < bytes.count else { throw end(expected: "'\"'") }
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                return String(decoding: utf8, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try parseEscape(into: &utf8)
            case 0x00..<0x20:
                throw JSONError(offset: position, problem: .controlCharacterInString(byte))
            case 0x20..<0x80:
                utf8.append(byte)
                position += 1
            default:
                let length = try validUTF8SequenceLength()
                utf8.append(contentsOf: bytes[position..<position + length])
                position += length
            }
        }
    }

    /// Reads a backslash escape and appends what it stands for as UTF-8.
    private mutating func parseEscape(into utf8: inout [UInt8]) throws(JSONError) {
        position += 1
        guard position < bytes.count else { throw end(expected: "an escape") }
        let byte = bytes[position]
        let simple: UInt8? =
            switch byte {
            case UInt8(ascii: "\""): 0x22
            case UInt8(ascii: "\\"): 0x5c
            case UInt8(ascii: "/"): 0x2f
            case UInt8(ascii: "b"): 0x08
            case UInt8(ascii: "f"): 0x0c
            case UInt8(ascii: "n"): 0x0a
            case UInt8(ascii: "r"): 0x0d
            case UInt8(ascii: "t"): 0x09
            default: nil
            }
        if let simple {
            utf8.append(simple)
            position += 1
            return
        }
        guard byte == UInt8(ascii: "u") else { throw JSONError(offset: position, problem: .invalidEscape(byte)) }
        let escapeStart = position - 1
        position += 1
        let unit = try hexQuad()
        var scalarValue = UInt32(unit)
        switch unit {
        case 0xD800...0xDBFF:
            guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                bytes[position + 1] == UInt8(ascii: "u")
            else { throw JSONError(offset: escapeStart, problem: .unpairedSurrogate(unit)) }
            position += 2
            let low = try hexQuad()
            guard (0xDC00...0xDFFF).contains(low) else {
                throw JSONError(offset: escapeStart, problem: .unpairedSurrogate(unit))
            }
            scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
        case 0xDC00...0xDFFF:
            throw JSONError(offset: escapeStart, problem: .unpairedSurrogate(unit))
        default:
            break
        }
        guard let scalar = Unicode.Scalar(scalarValue) else {
            throw JSONError(offset: escapeStart, problem: .invalidUnicodeEscape)
        }
        UTF8.encode(scalar) { utf8.append($0) }
    }

    /// Reads four hex digits.
    private mutating func hexQuad() throws(JSONError) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard position < bytes.count, let digit = hexDigit(bytes[position]) else {
                throw JSONError(offset: position, problem: .invalidUnicodeEscape)
            }
            value = value << 4 | UInt16(digit)
            position += 1
        }
        return value
    }

    /// The length of the well-formed UTF-8 sequence of two to four bytes at the position (Unicode Table 3-7).
    private func validUTF8SequenceLength() throws(JSONError) -> Int {
        let lead = bytes[position]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F
        default: throw JSONError(offset: position, problem: .invalidUTF8)
        }
        for index in 1..<length {
            let offset = position + index
            guard offset < bytes.count, (index == 1 ? secondRange : 0x80...0xBF).contains(bytes[offset]) else {
                throw JSONError(offset: position, problem: .invalidUTF8)
            }
        }
        return length
    }

    // MARK: - Bytes

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0a, 0x0d: position += 1
            default: return
            }
        }
    }

    private func peek(_ byte: UInt8) -> Bool { position < bytes.count && bytes[position] == byte }

    private func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private func end(expected: String) -> JSONError {
        JSONError(offset: position, problem: .unexpectedEnd(expected: expected))
    }

    private func unexpected(expected: String) -> JSONError {
        JSONError(offset: position, problem: .unexpectedByte(bytes[position], expected: expected))
    }
}
