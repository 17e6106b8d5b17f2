import DBus

/// A wireless daemon's properties, checked for type, with errors that name what a property is.
extension [String: DBusValue] {
    /// The property `name` as `read` takes it; fails, naming what it is, when it is missing or not a `signature`.
    func required<T>(_ name: String, _ signature: String, _ read: (DBusValue) -> T?) throws(PeerFailure) -> T {
        guard let value = try ifPresent(name, signature, read) else {
            throw PeerFailure("its \(name) is missing, not \(signature)")
        }
        return value
    }

    /// The property `name` as `read` takes it, nil when it is missing; fails, naming its type, when it is not a
    /// `signature`.
    func ifPresent<T>(_ name: String, _ signature: String, _ read: (DBusValue) -> T?) throws(PeerFailure) -> T? {
        guard let value = self[name] else { return nil }
        guard let taken = read(value) else { throw PeerFailure("its \(name) is \(value.signature), not \(signature)") }
        return taken
    }
}

/// The payloads of the arrays wireless daemons send.
extension DBusValue {
    /// The payload of an `ay`.
    var bytes: [UInt8]? {
        guard case .array(element: "y", let elements) = self else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(elements.count)
        for element in elements {
            guard case .byte(let byte) = element else { return nil }
            result.append(byte)
        }
        return result
    }

    /// The payload of an `ao`.
    var objectPaths: [ObjectPath]? {
        guard case .array(element: "o", let elements) = self else { return nil }
        return elements.compactMap(\.objectPath)
    }
}
