extension StaticLocation {
    /// A location set through `io.github.whereabouts1.Manager.SetStaticLocation`, checked against the ranges the
    /// static location file allows; the problem names the first value out of range.
    public init(checkingLatitude latitude: Double, longitude: Double, altitude: Double, accuracy: Double)
        throws(StaticLocationError.Problem)
    {
        let values: [(StaticLocationError.Field, Double)] = [
            (.latitude, latitude), (.longitude, longitude), (.altitude, altitude), (.accuracy, accuracy),
        ]
        for (field, value) in values {
            guard value.isFinite else { throw .notFinite(field, "\(value)") }
            if let range = field.range, !range.contains(value) { throw .outOfRange(field, "\(value)") }
        }
        self.init(latitude: latitude, longitude: longitude, altitude: altitude, accuracy: accuracy)
    }

    /// The location in the static location file's format, which ``StaticLocationFile/parse(_:file:)`` reads back
    /// exactly.
    public var fileText: String {
        "# Set with io.github.whereabouts1.Manager.SetStaticLocation\n\(latitude)\n\(longitude)\n\(altitude)\n\(accuracy)\n"
    }
}

extension StaticLocationError.Problem: Error {}
