/// The comma-separated fields of one sentence after its address, with typed, range-checked accessors.
///
/// Every accessor returns nil for an empty field (NMEA's "null field") or one past the end of the sentence,
/// and throws ``NMEAError/invalidField(sentence:field:value:)`` for a field that is present but wrong.
struct NMEAFields {
    /// The sentence type, for error messages.
    let sentence: String
    /// The fields after the address.
    let values: [Substring]

    /// Checks that the sentence has at least `required` fields.
    init(sentence: String, values: [Substring], required: Int) throws(NMEAError) {
        guard values.count >= required else {
            throw .tooFewFields(sentence: sentence, count: values.count, required: required)
        }
        self.sentence = sentence
        self.values = values
    }

    /// The field at `index`, or nil when it is empty or absent.
    private func text(_ index: Int) -> Substring? {
        index < values.count && !values[index].isEmpty ? values[index] : nil
    }

    private func invalid(_ field: String, _ value: Substring) -> NMEAError {
        .invalidField(sentence: sentence, field: field, value: String(value))
    }

    /// A plain decimal number, optionally required to lie in `range`.
    func decimal(_ index: Int, _ field: String, in range: PartialRangeFrom<Double>? = nil) throws(NMEAError)
        -> Double?
    {
        guard let text = text(index) else { return nil }
        guard let value = Lexical.decimal(text), range?.contains(value) ?? true else { throw invalid(field, text) }
        return value
    }

    /// A plain decimal number in a closed range.
    func decimal(_ index: Int, _ field: String, in range: ClosedRange<Double>) throws(NMEAError) -> Double? {
        guard let text = text(index) else { return nil }
        guard let value = Lexical.decimal(text), range.contains(value) else { throw invalid(field, text) }
        return value
    }

    /// A course in degrees, 0...360, normalized to 0..<360.
    func course(_ index: Int) throws(NMEAError) -> Double? {
        try decimal(index, "course", in: 0...360).map { $0 == 360 ? 0 : $0 }
    }

    /// An unsigned integer in `range`.
    func integer(_ index: Int, _ field: String, in range: ClosedRange<Int>) throws(NMEAError) -> Int? {
        guard let text = text(index) else { return nil }
        guard let value = Lexical.digits(text.utf8), range.contains(value) else { throw invalid(field, text) }
        return value
    }

    /// One hexadecimal digit, either case (NMEA 4.10's system and signal ids).
    func hexDigit(_ index: Int, _ field: String) throws(NMEAError) -> Int? {
        guard let text = text(index) else { return nil }
        guard text.count == 1, let digit = text.first?.hexDigitValue else { throw invalid(field, text) }
        return digit
    }

    /// A single letter from `allowed`.
    func letter(_ index: Int, _ field: String, from allowed: String) throws(NMEAError) -> Character? {
        guard let text = text(index) else { return nil }
        guard text.count == 1, let letter = text.first, allowed.contains(letter) else { throw invalid(field, text) }
        return letter
    }

    /// A unit field that must read `unit` whenever its value is present.
    func unit(_ index: Int, _ unit: Character, _ field: String, for value: Double?) throws(NMEAError) {
        let letter = try self.letter(index, field, from: String(unit))
        if value != nil, letter == nil { throw .missingField(sentence: sentence, field: field) }
    }

    /// A position from `ddmm.mmmm`,`N|S`,`dddmm.mmmm`,`E|W` in four consecutive fields starting at the given
    /// indices; nil when all four are empty.
    func position(latitude: Int, longitude: Int) throws(NMEAError) -> NMEASentence.Position? {
        let lat = try angle(latitude, "latitude", degreeDigits: 2, limit: 90, positive: "N", negative: "S")
        let lon = try angle(longitude, "longitude", degreeDigits: 3, limit: 180, positive: "E", negative: "W")
        switch (lat, lon) {
        case (nil, nil): return nil
        case (let lat?, let lon?): return NMEASentence.Position(latitude: lat, longitude: lon)
        case (nil, _): throw .missingField(sentence: sentence, field: "latitude")
        case (_, nil): throw .missingField(sentence: sentence, field: "longitude")
        }
    }

    /// Degrees and minutes (`ddmm.mmmm` or `dddmm.mmmm`) plus a hemisphere letter in the next field.
    ///
    /// Exactly `degreeDigits` + 2 integer digits are required, minutes must be below 60 and the angle at most
    /// `limit` degrees.
    private func angle(
        _ index: Int, _ field: String, degreeDigits: Int, limit: Double, positive: Character, negative: Character
    ) throws(NMEAError) -> Double? {
        let value = text(index)
        let hemisphere = try letter(index + 1, "\(field) hemisphere", from: String([positive, negative]))
        guard let value else {
            if hemisphere != nil { throw .missingField(sentence: sentence, field: field) }
            return nil
        }
        guard let hemisphere else { throw .missingField(sentence: sentence, field: "\(field) hemisphere") }
        let integerDigits = value.prefix { $0 != "." }
        guard integerDigits.count == degreeDigits + 2, Lexical.digits(integerDigits.utf8) != nil,
            let degrees = Lexical.digits(integerDigits.prefix(degreeDigits).utf8),
            let minutes = Lexical.decimal(value.dropFirst(degreeDigits)), minutes < 60
        else { throw invalid(field, value) }
        let angle = Double(degrees) + minutes / 60
        guard angle <= limit else { throw invalid(field, value) }
        return hemisphere == positive ? angle : -angle
    }

    /// A UTC time of day, `hhmmss` with an optional fraction of any length (digits past microseconds are
    /// truncated).
    func time(_ index: Int) throws(NMEAError) -> NMEATimeOfDay? {
        guard let text = text(index) else { return nil }
        let bytes = Array(text.utf8)
        guard bytes.count >= 6, let hour = Lexical.digits(bytes[0..<2]), let minute = Lexical.digits(bytes[2..<4]),
            let second = Lexical.digits(bytes[4..<6])
        else { throw invalid("time", text) }
        var microsecond: Int64 = 0
        if bytes.count > 6 {
            guard bytes[6] == UInt8(ascii: "."), let fraction = Lexical.fractionMicroseconds(bytes[7...]) else {
                throw invalid("time", text)
            }
            microsecond = fraction
        }
        guard let time = NMEATimeOfDay(hour: hour, minute: minute, second: second, microsecond: Int(microsecond))
        else { throw invalid("time", text) }
        return time
    }

    /// A UTC date, `ddmmyy`.
    func date(_ index: Int) throws(NMEAError) -> NMEADate? {
        guard let text = text(index) else { return nil }
        let bytes = Array(text.utf8)
        guard bytes.count == 6, let day = Lexical.digits(bytes[0..<2]), let month = Lexical.digits(bytes[2..<4]),
            let shortYear = Lexical.digits(bytes[4..<6]),
            let date = NMEADate(year: shortYear >= 80 ? 1900 + shortYear : 2000 + shortYear, month: month, day: day)
        else { throw invalid("date", text) }
        return date
    }
}
