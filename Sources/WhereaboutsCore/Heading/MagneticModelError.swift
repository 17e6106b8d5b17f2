/// Why a magnetic model's coefficient file (`WMM.COF`) was refused, and where: `<file>:<line>: <problem>`, the
/// line being the bad one's, or the last line's when something is missing.
public typealias MagneticModelError = LocatedError<MagneticModelProblem>

/// What is wrong with a magnetic model's coefficient file.
public enum MagneticModelProblem: Sendable, Equatable, CustomStringConvertible {
    /// The six fields of a coefficient line, in file order.
    public enum Field: Int, Sendable, Equatable, CaseIterable, CustomStringConvertible {
        /// n, the degree.
        case degree
        /// m, the order.
        case order
        /// g, in nanotesla.
        case g
        /// h, in nanotesla.
        case h
        /// ġ, g's yearly change, in nanotesla a year.
        case gRate
        /// ḣ, h's yearly change, in nanotesla a year.
        case hRate

        /// The field's name, e.g. "degree n" or "g (nT)".
        public var description: String {
            switch self {
            case .degree: "degree n"
            case .order: "order m"
            case .g: "g (nT)"
            case .h: "h (nT)"
            case .gRate: "g's secular variation (nT/year)"
            case .hRate: "h's secular variation (nT/year)"
            }
        }
    }

    /// The text has no line but blank ones.
    case empty
    /// The first line is not a header: the epoch as a decimal year, then the model's name (which is not a
    /// number), then its release date.
    case notAHeader(String)
    /// A coefficient line has other than six fields.
    case wrongFieldCount(found: Int, line: String)
    /// A field's text is not a whole number (degree and order) or not a finite number (the others).
    case notANumber(Field, String)
    /// A degree outside 1 to ``MagneticModel/degree``, or an order outside 0 to the degree.
    case degreeOutOfRange(degree: Int, order: Int)
    /// A second line for the same degree and order.
    case duplicate(degree: Int, order: Int)
    /// The file has no line for `count` degree and order pairs; the first missing is given.
    case missingCoefficients(degree: Int, order: Int, count: Int)
    /// The file ends without the line of 9s that closes the coefficients: it may have been cut short.
    case missingEndMarker

    /// A human explanation.
    public var description: String {
        switch self {
        case .empty:
            "the coefficient file is empty"
        case .notAHeader(let line):
            "\(quoted(line)) is not a header: the epoch (a decimal year), the model's name, its release date"
        case .wrongFieldCount(let found, let line):
            "\(quoted(line)) has \(found) fields; a coefficient line holds n, m, g, h and their secular variation"
        case .notANumber(let field, let text):
            "\(field): \(quoted(text)) is not a \(field == .degree || field == .order ? "whole" : "finite") number"
        case .degreeOutOfRange(let degree, let order):
            "degree \(degree) order \(order) is out of range: the degree runs from 1 to \(MagneticModel.degree), "
                + "the order from 0 to the degree"
        case .duplicate(let degree, let order):
            "degree \(degree) order \(order) is given twice"
        case .missingCoefficients(let degree, let order, let count):
            "\(count) coefficient lines are missing, the first of degree \(degree) order \(order)"
        case .missingEndMarker:
            "the line of 9s that ends the coefficients is missing; the file may have been cut short"
        }
    }
}
