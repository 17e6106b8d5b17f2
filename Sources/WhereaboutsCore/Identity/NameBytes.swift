/// The classes of ASCII bytes the names of apps, units and snaps are made of.
enum NameBytes {
    static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    static func isLowercase(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) }

    static func isAlphanumeric(_ byte: UInt8) -> Bool {
        isDigit(byte) || isLowercase(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }
}
