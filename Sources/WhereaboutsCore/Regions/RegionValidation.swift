/// A raw option value as the bus gave it; the service maps AddRegion's variants to this.
public enum RegionOptionValue: Sendable, Equatable {
    /// A `b`.
    case bool(Bool)
    /// A `u`.
    case uint32(UInt32)
    /// A `t`.
    case uint64(UInt64)
    /// Any other type, by its D-Bus signature.
    case other(signature: String)

    /// The D-Bus signature of the value.
    var signature: String {
        switch self {
        case .bool: "b"
        case .uint32: "u"
        case .uint64: "t"
        case .other(let signature): signature
        }
    }
}

/// Why AddRegion's arguments are refused: an InvalidArgs error.
public struct RegionArgumentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The D-Bus argument ("id", "latitude", "longitude", "radius", "options") or option ("notify-entry",
    /// "notify-exit", "dwell", "expires") at fault.
    public var argument: String
    /// A sentence saying what is wrong, for the error's message.
    public var description: String

    /// Makes an error.
    public init(argument: String, description: String) {
        self.argument = argument
        self.description = description
    }
}

extension Region {
    /// Checks AddRegion's arguments and makes the region watched.
    ///
    /// - `id`: 1 to ``maximumIDBytes`` bytes of UTF-8, no NUL.
    /// - `latitude` in −90…90, `longitude` in −180…180, both finite.
    /// - `radius`: above 0 and at most ``maximumRadius``; raised to ``minimumRadius`` when smaller.
    /// - `options`: "notify-entry" `b`, "notify-exit" `b`, "dwell" `u` seconds (0: off), "expires" `t` Unix
    ///   seconds (0: never; one before `now` is refused, as is one too far off to be a time); any other option,
    ///   or one of another type, is refused.
    ///
    /// - Throws: ``RegionArgumentError`` naming the first argument at fault (in the order above; options by
    ///   name).
    public static func validated(
        id: String, latitude: Double, longitude: Double, radius: Double, options: [String: RegionOptionValue],
        now: WallTime
    ) throws(RegionArgumentError) -> Region {
        try checkID(id)
        guard latitude.isFinite, (-90...90).contains(latitude) else {
            throw RegionArgumentError(argument: "latitude", description: "latitude \(latitude) is not in -90...90")
        }
        guard longitude.isFinite, (-180...180).contains(longitude) else {
            throw RegionArgumentError(
                argument: "longitude", description: "longitude \(longitude) is not in -180...180")
        }
        guard radius.isFinite, radius > 0, radius <= maximumRadius else {
            throw RegionArgumentError(
                argument: "radius",
                description: "radius \(radius) is not above 0 and at most \(Int(maximumRadius)) metres")
        }
        return Region(
            id: id, latitude: latitude, longitude: longitude, radius: max(radius, minimumRadius),
            options: try checkedOptions(options, now: now))
    }

    private static func checkID(_ id: String) throws(RegionArgumentError) {
        guard !id.isEmpty else { throw RegionArgumentError(argument: "id", description: "the id is empty") }
        guard id.utf8.count <= maximumIDBytes else {
            throw RegionArgumentError(
                argument: "id", description: "the id is \(id.utf8.count) bytes long, more than \(maximumIDBytes)")
        }
        guard !id.utf8.contains(0) else {
            throw RegionArgumentError(argument: "id", description: "the id contains a NUL character")
        }
    }

    private static func checkedOptions(
        _ values: [String: RegionOptionValue], now: WallTime
    ) throws(RegionArgumentError) -> RegionOptions {
        var options = RegionOptions()
        for name in values.keys.sorted() {
            let value = values[name]!
            func wrongType(_ expected: String) -> RegionArgumentError {
                RegionArgumentError(
                    argument: name,
                    description: "option '\(name)' has type '\(value.signature)', not '\(expected)'")
            }
            switch (name, value) {
            case ("notify-entry", .bool(let notify)): options.notifyEntry = notify
            case ("notify-exit", .bool(let notify)): options.notifyExit = notify
            case ("dwell", .uint32(let seconds)): options.dwell = seconds == 0 ? nil : .seconds(seconds)
            case ("expires", .uint64(let seconds)): options.expires = try expiry(seconds, now: now)
            case ("notify-entry", _), ("notify-exit", _): throw wrongType("b")
            case ("dwell", _): throw wrongType("u")
            case ("expires", _): throw wrongType("t")
            default:
                throw RegionArgumentError(
                    argument: "options",
                    description: "unknown option '\(name)'; known are notify-entry, notify-exit, dwell, expires")
            }
        }
        return options
    }

    /// The time of an "expires" of `seconds` since 1970; nil for 0.
    private static func expiry(_ seconds: UInt64, now: WallTime) throws(RegionArgumentError) -> WallTime? {
        guard seconds != 0 else { return nil }
        guard seconds <= UInt64(Int64.max / 1_000_000) else {
            throw RegionArgumentError(argument: "expires", description: "expires \(seconds) is not a usable time")
        }
        let expires = WallTime(microseconds: Int64(seconds) * 1_000_000)
        guard expires >= now else {
            throw RegionArgumentError(
                argument: "expires", description: "expires \(seconds) is in the past (now is \(now.seconds))")
        }
        return expires
    }
}
