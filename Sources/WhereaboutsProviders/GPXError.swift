/// Why a text is not a usable GPX document, and where.
public struct GPXError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The 1-based line on which the problem was found.
    public var line: Int
    /// What is wrong.
    public var reason: Reason

    /// The kinds of problems.
    public enum Reason: Sendable, Equatable {
        /// The text is not well-formed XML; the string says how.
        case malformedXML(String)
        /// The root element is not `gpx`.
        case notGPX(rootElement: String)
        /// A point element lacks a required attribute (`lat` or `lon`).
        case missingAttribute(element: String, attribute: String)
        /// A number is malformed or out of range; `field` names the attribute or element.
        case invalidValue(field: String, value: String)
        /// A `<time>` is not an ISO 8601 / `xsd:dateTime` UTC time.
        case invalidTime(String)
    }

    /// An error on `line`.
    public init(line: Int, reason: Reason) {
        self.line = line
        self.reason = reason
    }

    /// The line number and the problem, in one line of English: "line 3: invalid lat '95'".
    public var description: String {
        switch reason {
        case .malformedXML(let detail):
            "line \(line): malformed XML: \(detail)"
        case .notGPX(let root):
            "line \(line): root element is <\(root)>, not <gpx>"
        case .missingAttribute(let element, let attribute):
            "line \(line): <\(element)> lacks its \(attribute) attribute"
        case .invalidValue(let field, let value):
            "line \(line): invalid \(field) '\(value)'"
        case .invalidTime(let value):
            "line \(line): invalid time '\(value)', expected e.g. 2024-03-15T12:00:00Z"
        }
    }
}

extension GPXError {
    /// A value shortened for an error message, so that a megabyte of garbage does not end up in a log.
    static func excerpt(_ text: some StringProtocol) -> String {
        text.count <= 40 ? String(text) : String(text.prefix(40)) + "..."
    }
}
