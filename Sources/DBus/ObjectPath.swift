/// A validated D-Bus object path, such as `/org/freedesktop/GeoClue2/Manager`.
public struct ObjectPath: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The path as text.
    public let rawValue: String

    /// The root path `/`, GeoClue's "no object" value for `Client.Location` and `LocationUpdated`'s `old`.
    public static let root = ObjectPath(trusted: "/")

    /// Accepts `text` if it is a valid object path: `/`, or `/`-separated non-empty elements of `[A-Za-z0-9_]`.
    public init?(_ text: String) {
        guard ObjectPath.isValid(text) else { return nil }
        rawValue = text
    }

    /// Wraps a path the caller built from valid parts.
    package init(trusted text: String) { rawValue = text }

    /// The path of a child element, which must match `[A-Za-z0-9_]+`.
    public func appending(_ element: String) -> ObjectPath {
        precondition(!element.isEmpty && element.utf8.allSatisfy(ObjectPath.isElementByte), "bad path element")
        return ObjectPath(trusted: rawValue == "/" ? "/" + element : rawValue + "/" + element)
    }

    /// The path one level up; the root's parent is the root.
    public var parent: ObjectPath {
        guard let slash = rawValue.utf8.lastIndex(of: UInt8(ascii: "/")), rawValue != "/" else { return .root }
        let head = String(rawValue[..<slash])
        return ObjectPath(trusted: head.isEmpty ? "/" : head)
    }

    /// The last element, empty for the root.
    public var lastElement: String {
        guard let slash = rawValue.utf8.lastIndex(of: UInt8(ascii: "/")) else { return rawValue }
        return String(rawValue[rawValue.utf8.index(after: slash)...])
    }

    public var description: String { rawValue }

    public static func < (lhs: ObjectPath, rhs: ObjectPath) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The D-Bus specification's object path grammar.
    public static func isValid(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previousWasSlash = true
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "/") {
                if previousWasSlash { return false }
                previousWasSlash = true
            } else {
                guard isElementByte(byte) else { return false }
                previousWasSlash = false
            }
        }
        return true
    }

    private static func isElementByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == UInt8(ascii: "_")
    }
}
