/// A minimal, non-validating XML tokenizer: just enough of XML 1.0 for GPX files.
///
/// It handles the XML declaration and processing instructions (skipped), comments (skipped), a DOCTYPE
/// (skipped, with its internal subset; entities declared there are not expanded), CDATA sections, start, end
/// and empty-element tags with attributes in either quote style, the five predefined entities and character
/// references. Names keep their namespace prefixes; callers compare local names. It checks that tags are well
/// formed and that each byte is read once, so the cost is linear in the input. It does not check nesting; the
/// consumer does.
struct GPXXMLScanner {
    /// One piece of the document.
    enum Event {
        /// A start tag, or an empty-element tag when `isEmpty`.
        case start(name: String, attributes: [(name: String, value: String)], isEmpty: Bool)
        /// An end tag.
        case end(name: String)
        /// Character data, with references decoded, or the content of a CDATA section.
        case text(String)
    }

    private let bytes: [UInt8]
    private var position = 0
    /// The current line, 1-based.
    private(set) var line = 1
    /// The line on which the event last returned by ``next()`` started.
    private(set) var eventLine = 1

    /// A scanner at the start of `text`, past a byte-order mark if there is one.
    init(_ text: String) {
        bytes = Array(text.utf8)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
    }

    /// The next event, or nil at the end of the input.
    mutating func next() throws(GPXError) -> Event? {
        while position < bytes.count {
            eventLine = line
            guard bytes[position] == UInt8(ascii: "<") else { return .text(try scanText()) }
            if hasPrefix("<?") {
                try skip(past: "?>", what: "processing instruction")
            } else if hasPrefix("<!--") {
                try skip(past: "-->", what: "comment")
            } else if hasPrefix("<![CDATA[") {
                advance(by: 9)
                let start = position
                try skip(past: "]]>", what: "CDATA section")
                return .text(String(decoding: bytes[start..<(position - 3)], as: UTF8.self))
            } else if hasPrefix("<!DOCTYPE") {
                try skipDoctype()
            } else if hasPrefix("</") {
                advance(by: 2)
                let name = try scanName()
                skipWhitespace()
                try expect(">", "'>' to close </\(name)>")
                return .end(name: name)
            } else if hasPrefix("<!") {
                throw malformed("unexpected markup declaration")
            } else {
                return try scanStartTag()
            }
        }
        return nil
    }

    // MARK: Bytes and lines

    private func malformed(_ detail: String) -> GPXError {
        GPXError(line: line, reason: .malformedXML(detail))
    }

    private func hasPrefix(_ prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard bytes.count - position >= count else { return false }
        return prefix.withUTF8Buffer { prefix in
            for offset in 0..<count where bytes[position + offset] != prefix[offset] { return false }
            return true
        }
    }

    private mutating func advance(by count: Int = 1) {
        for _ in 0..<count {
            if bytes[position] == 0x0A { line += 1 }
            position += 1
        }
    }

    private mutating func skip(past terminator: StaticString, what: String) throws(GPXError) {
        let startLine = line
        while position < bytes.count {
            if hasPrefix(terminator) {
                advance(by: terminator.utf8CodeUnitCount)
                return
            }
            advance()
        }
        throw GPXError(line: startLine, reason: .malformedXML("unterminated \(what)"))
    }

    private mutating func skipDoctype() throws(GPXError) {
        let startLine = line
        var depth = 0
        var quote: UInt8?
        advance(by: 9)
        while position < bytes.count {
            if quote == nil, hasPrefix("<!--") {
                try skip(past: "-->", what: "comment")
                continue
            }
            let byte = bytes[position]
            advance()
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: "[") {
                depth += 1
            } else if byte == UInt8(ascii: "]") {
                depth -= 1
            } else if byte == UInt8(ascii: ">"), depth <= 0 {
                return
            }
        }
        throw GPXError(line: startLine, reason: .malformedXML("unterminated DOCTYPE"))
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// Skips whitespace; returns whether there was any.
    @discardableResult
    private mutating func skipWhitespace() -> Bool {
        let start = position
        while position < bytes.count, Self.isWhitespace(bytes[position]) { advance() }
        return position > start
    }

    private mutating func expect(_ byte: Unicode.Scalar, _ what: String) throws(GPXError) {
        guard position < bytes.count else { throw malformed("unexpected end of input, expected \(what)") }
        guard bytes[position] == UInt8(ascii: byte) else { throw malformed("expected \(what)") }
        advance()
    }

    // MARK: Names, tags, text

    private static func isNameStart(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte >= 0x80
    }

    private static func isNameCharacter(_ byte: UInt8) -> Bool {
        isNameStart(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".")
    }

    private mutating func scanName() throws(GPXError) -> String {
        guard position < bytes.count else { throw malformed("unexpected end of input, expected a name") }
        guard Self.isNameStart(bytes[position]) else { throw malformed("expected a name") }
        let start = position
        while position < bytes.count, Self.isNameCharacter(bytes[position]) { position += 1 }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    private mutating func scanStartTag() throws(GPXError) -> Event {
        advance()
        let name = try scanName()
        var attributes: [(name: String, value: String)] = []
        var attributeNames: Set<String> = []
        while true {
            let separated = skipWhitespace()
            guard position < bytes.count else { throw malformed("unterminated <\(name)> tag") }
            if bytes[position] == UInt8(ascii: ">") {
                advance()
                return .start(name: name, attributes: attributes, isEmpty: false)
            }
            if bytes[position] == UInt8(ascii: "/") {
                advance()
                try expect(">", "'>' after '/' in <\(name)>")
                return .start(name: name, attributes: attributes, isEmpty: true)
            }
            guard separated else { throw malformed("expected whitespace before an attribute in <\(name)>") }
            let attribute = try scanName()
            skipWhitespace()
            try expect("=", "'=' after attribute \(attribute)")
            skipWhitespace()
            let value = try scanAttributeValue()
            guard attributeNames.insert(attribute).inserted else {
                throw malformed("duplicate attribute \(attribute) in <\(name)>")
            }
            attributes.append((attribute, value))
        }
    }

    private mutating func scanAttributeValue() throws(GPXError) -> String {
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") || bytes[position] == UInt8(ascii: "'")
        else { throw malformed("expected a quoted attribute value") }
        let quote = bytes[position]
        advance()
        var value: [UInt8] = []
        while position < bytes.count {
            let byte = bytes[position]
            if byte == quote {
                advance()
                return String(decoding: value, as: UTF8.self)
            } else if byte == UInt8(ascii: "<") {
                throw malformed("'<' in an attribute value")
            } else if byte == UInt8(ascii: "&") {
                try scanReference(into: &value)
            } else {
                value.append(Self.isWhitespace(byte) ? 0x20 : byte)
                advance()
            }
        }
        throw malformed("unterminated attribute value")
    }

    private mutating func scanText() throws(GPXError) -> String {
        var text: [UInt8] = []
        while position < bytes.count, bytes[position] != UInt8(ascii: "<") {
            if bytes[position] == UInt8(ascii: "&") {
                try scanReference(into: &text)
            } else {
                text.append(bytes[position])
                advance()
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Decodes `&name;`, `&#ddd;` or `&#xhh;` at the current position and appends its UTF-8.
    private mutating func scanReference(into output: inout [UInt8]) throws(GPXError) {
        let start = position + 1
        var end = start
        while end < bytes.count, end - start <= 10, bytes[end] != UInt8(ascii: ";") { end += 1 }
        guard end < bytes.count, bytes[end] == UInt8(ascii: ";") else {
            throw malformed("'&' not followed by an entity or character reference")
        }
        let reference = bytes[start..<end]
        let scalar: Unicode.Scalar?
        switch String(decoding: reference, as: UTF8.self) {
        case "amp": scalar = "&"
        case "lt": scalar = "<"
        case "gt": scalar = ">"
        case "quot": scalar = "\""
        case "apos": scalar = "'"
        case let name where name.hasPrefix("#x"):
            let digits = name.dropFirst(2)
            scalar = digits.allSatisfy(\.isHexDigit) ? UInt32(digits, radix: 16).flatMap(Unicode.Scalar.init) : nil
        case let name where name.hasPrefix("#"):
            let digits = name.dropFirst()
            scalar = digits.allSatisfy { $0.isASCII && $0.isNumber } ? UInt32(digits).flatMap(Unicode.Scalar.init) : nil
        case let name:
            throw malformed("unknown entity &\(GPXError.excerpt(name));")
        }
        guard let scalar, scalar.value != 0 else {
            throw malformed("invalid character reference &\(String(decoding: reference, as: UTF8.self));")
        }
        output.append(contentsOf: String(Character(scalar)).utf8)
        advance(by: end + 1 - position)
    }
}
