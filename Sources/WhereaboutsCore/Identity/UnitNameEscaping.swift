/// systemd's escaping of unit names (`systemd-escape`, and Flatpak's own copy of it): a byte that may not stand in a
/// name, `-` among them, is written `\xNN`, two hex digits.
enum UnitNameEscaping {
    /// `name` with each `\xNN` replaced by its byte; `nil` when a backslash starts anything else.
    static func unescape(_ name: ArraySlice<UInt8>) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(name.count)
        var index = name.startIndex
        while index < name.endIndex {
            guard name[index] == UInt8(ascii: "\\") else {
                bytes.append(name[index])
                index += 1
                continue
            }
            guard name.endIndex - index >= 4, name[index + 1] == UInt8(ascii: "x"),
                let high = hexValue(name[index + 2]), let low = hexValue(name[index + 3])
            else { return nil }
            bytes.append(high << 4 | low)
            index += 4
        }
        return bytes
    }

    /// The value of a hex digit, either case.
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
