extension MagneticModel {
    /// Parses the text of a World Magnetic Model coefficient file, `WMM.COF` as NOAA NCEI publishes it; `file` names
    /// it in errors.
    ///
    /// The first line is the header: the epoch as a decimal year, the model's name and its release date
    /// (`    2025.0            WMM-2025     11/13/2024`); fields after the name are not read. Each line after it holds
    /// `n m g h ġ ḣ`, separated by spaces: degree, order, the Gauss coefficients in nanotesla and their secular
    /// variation in nanotesla a year. There must be one line for each degree 1...12 and order 0...degree, in any
    /// order, and then a line of 9s, after which nothing is read. Blank lines are skipped and CRLF line ends are
    /// accepted.
    public static func parse(cofText: String, file: String) throws(MagneticModelError) -> MagneticModel {
        let lines = splitLines(cofText).enumerated().map { (number: $0.offset + 1, fields: fields(of: $0.element)) }
            .filter { !$0.fields.isEmpty }
        guard let header = lines.first else { throw MagneticModelError(file: file, line: 1, problem: .empty) }
        let (name, epoch) = try parseHeader(header.fields, file: file, line: header.number)
        var coefficients = [GaussCoefficient?](
            repeating: nil, count: coefficientIndex(degree: degree, order: degree) + 1)
        var ended = false
        for line in lines.dropFirst() {
            if line.fields.count == 1, line.fields[0].utf8.allSatisfy({ $0 == UInt8(ascii: "9") }) {
                ended = true
                break
            }
            let (n, m, coefficient) = try parseCoefficientLine(line.fields, file: file, line: line.number)
            let index = coefficientIndex(degree: n, order: m)
            guard coefficients[index] == nil else {
                throw MagneticModelError(file: file, line: line.number, problem: .duplicate(degree: n, order: m))
            }
            coefficients[index] = coefficient
        }
        let lastLine = lines.last?.number ?? 1
        let missing = (1...degree).flatMap { n in (0...n).map { m in (n, m) } }
            .filter { coefficients[coefficientIndex(degree: $0.0, order: $0.1)] == nil }
        if let (n, m) = missing.first {
            throw MagneticModelError(
                file: file, line: lastLine, problem: .missingCoefficients(degree: n, order: m, count: missing.count))
        }
        guard ended else { throw MagneticModelError(file: file, line: lastLine, problem: .missingEndMarker) }
        // Degree 0 has no coefficient; its slot stays zero.
        let zero = GaussCoefficient(g: 0, h: 0, gRate: 0, hRate: 0)
        return MagneticModel(name: name, epoch: epoch, coefficients: coefficients.map { $0 ?? zero })
    }

    /// The header's model name and epoch.
    private static func parseHeader(_ fields: [Substring], file: String, line: Int) throws(MagneticModelError)
        -> (name: String, epoch: Double)
    {
        guard fields.count >= 2, let epoch = Double(String(fields[0])), epoch.isFinite, Double(String(fields[1])) == nil
        else {
            throw MagneticModelError(
                file: file, line: line, problem: .notAHeader(fields.joined(separator: " ")))
        }
        return (String(fields[1]), epoch)
    }

    /// A coefficient line's degree, order and coefficients.
    private static func parseCoefficientLine(_ fields: [Substring], file: String, line: Int)
        throws(MagneticModelError) -> (degree: Int, order: Int, coefficient: GaussCoefficient)
    {
        guard fields.count == MagneticModelProblem.Field.allCases.count else {
            throw MagneticModelError(
                file: file, line: line,
                problem: .wrongFieldCount(found: fields.count, line: fields.joined(separator: " ")))
        }
        guard let n = Int(fields[0]) else {
            throw MagneticModelError(file: file, line: line, problem: .notANumber(.degree, String(fields[0])))
        }
        guard let m = Int(fields[1]) else {
            throw MagneticModelError(file: file, line: line, problem: .notANumber(.order, String(fields[1])))
        }
        guard (1...degree).contains(n), (0...n).contains(m) else {
            throw MagneticModelError(file: file, line: line, problem: .degreeOutOfRange(degree: n, order: m))
        }
        var values: [Double] = []
        for field in MagneticModelProblem.Field.allCases.dropFirst(2) {
            let text = String(fields[field.rawValue])
            guard let value = Double(text), value.isFinite else {
                throw MagneticModelError(file: file, line: line, problem: .notANumber(field, text))
            }
            values.append(value)
        }
        return (n, m, GaussCoefficient(g: values[0], h: values[1], gRate: values[2], hRate: values[3]))
    }

    /// The fields of a line: its runs of characters other than spaces and tabs.
    private static func fields(of line: Substring) -> [Substring] {
        line.utf8.split(whereSeparator: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }).map { Substring($0) }
    }
}
