extension JSONValue {
    /// The value as compact JSON text, the same text for the same value.
    ///
    /// * Object members are sorted by the UTF-8 bytes of their keys; there is no whitespace.
    /// * A whole number is written as an integer (`-60`, not `-60.0`; negative zero as `-0`; `1e+300` stays
    ///   in exponent form); any other finite number with Swift's shortest representation that reads back as
    ///   the same `Double` (`0.1`, `1e-07`, `1.5e+300`). NaN and infinities, which JSON cannot carry, are
    ///   written as `null`.
    /// * Strings escape `"` and `\`, write the control characters below U+0020 as `\b \f \n \r \t` or `\u00XX`,
    ///   and carry everything else as UTF-8.
    public var serialized: String {
        var writer = JSONWriter()
        writer.write(self)
        return String(decoding: writer.output, as: UTF8.self)
    }

    /// ``serialized`` as UTF-8 bytes, a request body.
    public var serializedBytes: [UInt8] {
        var writer = JSONWriter()
        writer.write(self)
        return writer.output
    }
}

/// Writes ``JSONValue``s as compact, deterministic JSON text.
struct JSONWriter {
    /// The UTF-8 text written so far.
    private(set) var output: [UInt8] = []

    /// 2^63: every whole `Double` of smaller magnitude is exactly an `Int64`.
    private static let integerLimit = 9_223_372_036_854_775_808.0

    mutating func write(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .number(let number): append(JSONWriter.text(of: number))
        case .string(let string): write(string: string)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(element)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            let sorted = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (index, member) in sorted.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(string: member.key)
                output.append(UInt8(ascii: ":"))
                write(member.value)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// The JSON text of a number, as ``JSONValue/serialized`` describes.
    static func text(of number: Double) -> String {
        guard number.isFinite else { return "null" }
        if number == 0 { return number.sign == .minus ? "-0" : "0" }
        if number.rounded(.towardZero) == number, abs(number) < integerLimit { return String(Int64(number)) }
        let text = number.description
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }

    private mutating func write(string: String) {
        output.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): append("\\\"")
            case UInt8(ascii: "\\"): append("\\\\")
            case 0x08: append("\\b")
            case 0x0c: append("\\f")
            case 0x0a: append("\\n")
            case 0x0d: append("\\r")
            case 0x09: append("\\t")
            case 0x00..<0x20: append("\\u00" + JSONError.hex(UInt16(byte), digits: 2).lowercased())
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    private mutating func append(_ text: String) { output.append(contentsOf: text.utf8) }
}
