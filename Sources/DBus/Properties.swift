import Loop

/// The standard `org.freedesktop.DBus.Properties` methods, served for every exported object.
///
/// Errors use the names and messages GDBus (and so GeoClue) gives: `InvalidArgs` for unknown, read-only or
/// mistyped properties.
@BusActor
enum PropertiesDispatch {
    static func handle(_ call: MethodCall, member: String, object: any ExportedObject, path: ObjectPath)
        throws(DBusError) -> Reply
    {
        let arguments = call.arguments
        switch member {
        case "Get":
            guard call.message.signature == "ss" else { throw signatureError(call, expected: "ss") }
            let property = try find(object, interface: arguments[0].string!, name: arguments[1].string!, path: path)
            if let denied = object.checkAccess(sender: call.sender) { throw denied }
            guard property.1.access != .write else {
                throw .invalidArgs("Property “\(property.1.name)” is not readable")
            }
            let name = property.1.name
            if let refused = object.readRefusal(of: name, interface: property.0) { throw refused }
            return answer(call, object.read([name], interface: property.0, call: call)) { values in
                [.variant(values[name] ?? object.property(name, interface: property.0))]
            }
        case "GetAll":
            guard call.message.signature == "s" else { throw signatureError(call, expected: "s") }
            let interfaceName = arguments[0].string!
            guard let interface = object.interfaces.first(where: { $0.name == interfaceName }) else {
                if isStandard(interfaceName) { return .values([.vardict([:])]) }
                throw .invalidArgs("No such interface “\(interfaceName)”")
            }
            // As GDBus leaves out each property whose read is refused, a caller who may read none gets none.
            guard object.checkAccess(sender: call.sender) == nil else { return .values([.vardict([:])]) }
            let names = interface.properties.filter {
                $0.access != .write && object.readRefusal(of: $0.name, interface: interfaceName) == nil
            }.map(\.name)
            return answer(call, object.read(names, interface: interface.name, call: call)) { [.vardict($0)] }
        case "Set":
            guard call.message.signature == "ssv" else { throw signatureError(call, expected: "ssv") }
            let property = try find(object, interface: arguments[0].string!, name: arguments[1].string!, path: path)
            if let denied = object.checkAccess(sender: call.sender) { throw denied }
            guard property.1.access != .read else {
                throw .invalidArgs("Property “\(property.1.name)” is not writable")
            }
            let value = arguments[2].unwrapped
            guard value.signature == property.1.signature else {
                throw .invalidArgs(
                    "Error setting property “\(property.1.name)”: Expected type “\(property.1.signature)” but got “\(value.signature)”"
                )
            }
            return try object.setProperty(property.1.name, interface: property.0, value: value, call: call)
        default:
            throw .unknownMethod("No such method “\(member)”")
        }
    }

    /// The reply to a `Get` or `GetAll` from what the object read: at once, or once its work is done.
    private static func answer(
        _ call: MethodCall, _ read: PropertyRead, _ reply: @escaping @BusActor ([String: DBusValue]) -> [DBusValue]
    ) -> Reply {
        switch read {
        case .values(let values):
            return .values(reply(values))
        case .later(let work):
            BusActor.task {
                do throws(DBusError) {
                    let read = try await work()
                    call.replyInTurn { reply(read()) }
                } catch {
                    call.fail(error)
                }
            }
            return .later
        }
    }

    private static func find(_ object: any ExportedObject, interface: String, name: String, path: ObjectPath)
        throws(DBusError) -> (String, PropertyDescription)
    {
        guard let owner = object.interfaces.first(where: { $0.name == interface }) else {
            throw .invalidArgs("No such interface “\(interface)”")
        }
        guard let property = owner.property(name) else { throw .invalidArgs("No such property “\(name)”") }
        return (owner.name, property)
    }

    private static func isStandard(_ interface: String) -> Bool {
        interface.hasPrefix("org.freedesktop.DBus.")
    }

    private static func signatureError(_ call: MethodCall, expected: String) -> DBusError {
        .invalidArgs("Type of message, “(\(call.message.signature))”, does not match expected type “(\(expected))”")
    }
}
