/// `busctl`'s plain output (`a{uv} 1 4 s "$GPGGA,...\r\n..."`) as words: the type signatures, counts and numbers as
/// printed, each quoted string unquoted with its C escapes (`\r`, `\n`, `\"`, `\\`, octal `\ooo`, ...) undone.
public enum BusctlWords {
    /// The words of `output`, in order.
    public static func split(_ output: String) -> [String] {
        var words: [String] = []
        var characters = Array(output.unicodeScalars)[...]
        while let first = characters.first {
            if first.properties.isWhitespace {
                characters = characters.dropFirst()
            } else if first == "\"" {
                characters = characters.dropFirst()
                words.append(quoted(&characters))
            } else {
                let word = characters.prefix { !$0.properties.isWhitespace }
                words.append(String(String.UnicodeScalarView(word)))
                characters = characters.dropFirst(word.count)
            }
        }
        return words
    }

    /// Reads a quoted string's body and its closing quote from `characters`.
    private static func quoted(_ characters: inout ArraySlice<Unicode.Scalar>) -> String {
        var bytes: [UInt8] = []
        while let character = characters.popFirst(), character != "\"" {
            guard character == "\\", let escaped = characters.popFirst() else {
                bytes += Array(String(character).utf8)
                continue
            }
            switch escaped {
            case "n": bytes.append(0x0A)
            case "r": bytes.append(0x0D)
            case "t": bytes.append(0x09)
            case "a": bytes.append(0x07)
            case "b": bytes.append(0x08)
            case "f": bytes.append(0x0C)
            case "v": bytes.append(0x0B)
            case "0"..."7":
                var value = escaped.value - 0x30
                for _ in 0..<2 {
                    guard let digit = characters.first, ("0"..."7").contains(digit) else { break }
                    value = value * 8 + digit.value - 0x30
                    characters = characters.dropFirst()
                }
                bytes.append(UInt8(truncatingIfNeeded: value))
            default: bytes += Array(String(escaped).utf8)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
