import DBus

/// A client's property changes made while one event of its life is carried out (``ClientObject/apply(_:answering:)``),
/// announced together once it is done: one `PropertiesChanged` per interface, leaving out each property that came
/// back to its value before the event. GeoClue's generated skeleton announces the changes of one main-loop turn so,
/// which is why a `Start` with a fix at hand gives its client one `PropertiesChanged` of `Active` and `Location`.
struct ClientPropertyChanges {
    private struct Change {
        let interface: String
        let name: String
        let before: DBusValue
        var after: DBusValue
    }

    private var changes: [Change] = []

    /// Notes that `name` of `interface` went from `before` to `after`; a second change of it keeps the first one's
    /// `before`.
    mutating func note(_ name: String, of interface: String, from before: DBusValue, to after: DBusValue) {
        if let index = changes.firstIndex(where: { $0.name == name && $0.interface == interface }) {
            changes[index].after = after
        } else {
            changes.append(Change(interface: interface, name: name, before: before, after: after))
        }
    }

    /// What to announce: the changed values of each interface, the interfaces in the order of their first change.
    var announcements: [(interface: String, values: [String: DBusValue])] {
        var result: [(interface: String, values: [String: DBusValue])] = []
        for change in changes where change.after != change.before {
            if let index = result.firstIndex(where: { $0.interface == change.interface }) {
                result[index].values[change.name] = change.after
            } else {
                result.append((change.interface, [change.name: change.after]))
            }
        }
        return result
    }
}
