import DBus

/// A client's property changes made while one event of its life is carried out (``ClientObject/apply(_:answering:)``),
/// announced together once it is done: one `PropertiesChanged` per interface, leaving out each property that came
/// back to its value before the event. GeoClue's generated skeleton announces the changes of one main-loop turn so,
/// which is why a `Start` with a fix at hand gives its client one `PropertiesChanged` of `Active` and `Location`.
///
/// An event changes at most these three, and one is noted for every fix of every client, so each has a field of
/// its own and noting one allocates nothing.
struct ClientPropertyChanges {
    private struct Change<Value: Equatable> {
        let before: Value
        var after: Value

        /// The value to announce, when it is not where it began.
        var announced: Value? { after == before ? nil : after }

        static func note(_ change: inout Change?, from before: Value, to after: Value) {
            if change == nil {
                change = Change(before: before, after: after)
            } else {
                change?.after = after
            }
        }
    }

    private var active: Change<Bool>?
    private var location: Change<ObjectPath>?
    private var available: Change<Bool>?

    /// `Active` of GeoClue's client interface went from `before` to `after`.
    mutating func active(from before: Bool, to after: Bool) { Change.note(&active, from: before, to: after) }

    /// `Location` of GeoClue's client interface went from `before` to `after`.
    mutating func location(from before: ObjectPath, to after: ObjectPath) {
        Change.note(&location, from: before, to: after)
    }

    /// `Available` of Whereabouts' client interface went from `before` to `after`.
    mutating func available(from before: Bool, to after: Bool) {
        Change.note(&available, from: before, to: after)
    }

    /// What to announce of GeoClue's client interface; nil when nothing.
    var geoClueValues: [String: DBusValue]? {
        var values: [String: DBusValue] = [:]
        if let active = active?.announced { values["Active"] = .boolean(active) }
        if let path = location?.announced { values["Location"] = .objectPath(path) }
        return values.isEmpty ? nil : values
    }

    /// What to announce of Whereabouts' client interface; nil when nothing.
    var whereaboutsValues: [String: DBusValue]? {
        available?.announced.map { ["Available": .boolean($0)] }
    }
}
