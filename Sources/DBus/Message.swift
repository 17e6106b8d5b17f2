import CDBus

#if canImport(Glibc)
    import Glibc
#endif

/// A D-Bus message: a method call, a method return, an error or a signal, with its body.
///
/// The wrapper owns one reference to libdbus's `DBusMessage`.
public final class Message: @unchecked Sendable {
    let raw: OpaquePointer

    /// The kind of message.
    public enum Kind: Sendable, Equatable {
        case methodCall, methodReturn, error, signal, other
    }

    /// Wraps `raw`, taking over the reference the caller holds (as libdbus hands out a message it made).
    package init(owning raw: OpaquePointer) { self.raw = raw }

    init(retaining raw: OpaquePointer) {
        self.raw = raw
        dbus_message_ref(raw)
    }

    deinit { dbus_message_unref(raw) }

    /// A method call to `member` of `interface` on the object `path` of `destination`.
    public static func methodCall(
        destination: String?, path: ObjectPath, interface: String?, member: String, arguments: [DBusValue] = []
    ) throws(DBusError) -> Message {
        guard let raw = dbus_message_new_method_call(destination, path.rawValue, interface, member) else {
            throw .invalidArgs("invalid method call header for \(interface ?? "").\(member)")
        }
        let message = Message(owning: raw)
        try message.append(arguments)
        return message
    }

    /// A signal `member` of `interface` from the object `path`, sent to `destination` alone when it is given.
    ///
    /// The message is written whole in the wire format and loaded by libdbus in one pass that checks every name,
    /// path, string and signature (``WireEncoder``): signals are what every fix costs per client, and libdbus's
    /// message API rewrites the header for each field and argument added.
    public static func signal(
        path: ObjectPath, interface: String, member: String, arguments: [DBusValue] = [], destination: String? = nil
    ) throws(DBusError) -> Message {
        for argument in arguments { try argument.validate() }
        for text in [interface, member, destination ?? ""] where text.utf8.contains(0) {
            throw .invalidArgs("invalid signal header for \(interface).\(member)")
        }
        let bytes = WireEncoder.signal(
            path: path.rawValue, interface: interface, member: member, destination: destination,
            signature: arguments.map(\.signature).joined(), body: WireEncoder.body(arguments))
        guard bytes.count <= Int(Int32.max) else { throw .limitsExceeded("a signal of \(bytes.count) bytes") }
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let loaded = bytes.withUnsafeBytes { buffer in
            dbus_message_demarshal(buffer.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(buffer.count), &error)
        }
        guard let raw = loaded else {
            let reason = dbus_error_is_set(&error) != 0 ? String(cString: error.message) : "out of memory"
            throw .invalidArgs("invalid signal \(interface).\(member): \(reason)")
        }
        // The connection numbers the message when it is sent.
        dbus_message_set_serial(raw, 0)
        return Message(owning: raw)
    }

    /// The successful reply to this method call.
    public func methodReturn(_ arguments: [DBusValue] = []) throws(DBusError) -> Message {
        guard let raw = dbus_message_new_method_return(raw) else { throw .failed("out of memory") }
        let reply = Message(owning: raw)
        try reply.append(arguments)
        return reply
    }

    /// This method call's header alone: who sent it, its serial and flags, and what it calls, without its body. What
    /// answering it needs: libdbus counts every message it read against what it reads at all, until the message is
    /// let go, so a call answered later must not keep its body.
    func headerOnly() -> Message? {
        guard let copy = dbus_message_new(DBUS_MESSAGE_TYPE_METHOD_CALL) else { return nil }
        let header = Message(owning: copy)
        guard dbus_message_set_sender(copy, dbus_message_get_sender(raw)) != 0,
            dbus_message_set_path(copy, dbus_message_get_path(raw)) != 0,
            dbus_message_set_interface(copy, dbus_message_get_interface(raw)) != 0,
            dbus_message_set_member(copy, dbus_message_get_member(raw)) != 0
        else { return nil }
        dbus_message_set_serial(copy, dbus_message_get_serial(raw))
        dbus_message_set_no_reply(copy, dbus_message_get_no_reply(raw))
        dbus_message_set_allow_interactive_authorization(copy, dbus_message_get_allow_interactive_authorization(raw))
        return header
    }

    /// The error reply to this method call.
    public func errorReply(_ error: DBusError) -> Message? {
        let name = DBusNames.isValidErrorName(error.name) ? error.name : DBusError.Name.failed
        let text = String(error.message.unicodeScalars.filter { $0 != "\0" })
        guard let raw = dbus_message_new_error(raw, name, text) else { return nil }
        return Message(owning: raw)
    }

    /// The message kind.
    public var kind: Kind {
        switch dbus_message_get_type(raw) {
        case DBUS_MESSAGE_TYPE_METHOD_CALL: .methodCall
        case DBUS_MESSAGE_TYPE_METHOD_RETURN: .methodReturn
        case DBUS_MESSAGE_TYPE_ERROR: .error
        case DBUS_MESSAGE_TYPE_SIGNAL: .signal
        default: .other
        }
    }

    /// The sender's unique bus name, set by the bus.
    public var sender: String? { dbus_message_get_sender(raw).map { String(cString: $0) } }
    /// The addressee's bus name.
    public var destination: String? { dbus_message_get_destination(raw).map { String(cString: $0) } }
    /// The object path of a call or signal.
    public var path: ObjectPath? { dbus_message_get_path(raw).map { ObjectPath(trusted: String(cString: $0)) } }
    /// The interface of a call or signal.
    public var interface: String? { dbus_message_get_interface(raw).map { String(cString: $0) } }
    /// The member (method or signal name).
    public var member: String? { dbus_message_get_member(raw).map { String(cString: $0) } }
    /// The error name of an error message.
    public var errorName: String? { dbus_message_get_error_name(raw).map { String(cString: $0) } }
    /// The body's signature.
    public var signature: String { dbus_message_get_signature(raw).map { String(cString: $0) } ?? "" }
    /// True when the caller does not want a reply.
    public var noReplyExpected: Bool { dbus_message_get_no_reply(raw) != 0 }
    /// True when the message carries Unix file descriptors, which decoding its body would duplicate.
    var carriesFileDescriptors: Bool { dbus_message_contains_unix_fds(raw) != 0 }
    /// True when the caller allows the service to prompt the user (for example through polkit) while handling it.
    public var allowsInteractiveAuthorization: Bool {
        get { dbus_message_get_allow_interactive_authorization(raw) != 0 }
        set { dbus_message_set_allow_interactive_authorization(raw, newValue ? 1 : 0) }
    }

    /// The most values one body is decoded into, counting every element of every container: a peer cannot make
    /// the process allocate more than this for one message, however large the message.
    public static let maximumDecodedValues = 1 << 16

    /// The decoded body; empty when it holds more than ``maximumDecodedValues`` values.
    public func arguments() -> [DBusValue] { boundedArguments() ?? [] }

    /// The decoded body, or nil when it holds more than ``maximumDecodedValues`` values.
    ///
    /// File descriptors in the body are closed as they are read and decode as `-1`: nothing in Whereabouts takes
    /// one, and a descriptor kept open for every message that carries one would let a peer exhaust them.
    public func boundedArguments() -> [DBusValue]? {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iterator) != 0 else { return [] }
        var reader = BodyReader(budget: Message.maximumDecodedValues)
        var values: [DBusValue] = []
        repeat {
            values.append(reader.read(&iterator))
        } while !reader.exceeded && dbus_message_iter_next(&iterator) != 0
        return reader.exceeded ? nil : values
    }

    /// The error carried by an error message.
    public var error: DBusError? {
        guard kind == .error else { return nil }
        return DBusError(name: errorName ?? DBusError.Name.failed, message: arguments().first?.string ?? "")
    }

    /// Appends values to the body.
    public func append(_ values: [DBusValue]) throws(DBusError) {
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(raw, &iterator)
        for value in values {
            try value.validate()
            guard Message.write(value, to: &iterator) else { throw .failed("could not marshal a \(value.signature)") }
        }
    }

    // MARK: Marshalling

    private static func appendBasic<T: BitwiseCopyable>(_ iterator: inout DBusMessageIter, _ type: Int32, _ value: T)
        -> Bool
    {
        var copy = value
        return withUnsafeBytes(of: &copy) { dbus_message_iter_append_basic(&iterator, type, $0.baseAddress) != 0 }
    }

    private static func appendText(_ iterator: inout DBusMessageIter, _ type: Int32, _ value: String) -> Bool {
        value.withCString { pointer in
            var text: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(&iterator, type, &text) != 0
        }
    }

    private static func appendContainer(
        _ iterator: inout DBusMessageIter, _ type: Int32, _ signature: String?,
        _ body: (inout DBusMessageIter) -> Bool
    ) -> Bool {
        var child = DBusMessageIter()
        let opened: Bool =
            if let signature {
                signature.withCString { dbus_message_iter_open_container(&iterator, type, $0, &child) != 0 }
            } else {
                dbus_message_iter_open_container(&iterator, type, nil, &child) != 0
            }
        guard opened else { return false }
        guard body(&child) else {
            dbus_message_iter_abandon_container(&iterator, &child)
            return false
        }
        return dbus_message_iter_close_container(&iterator, &child) != 0
    }

    static func write(_ value: DBusValue, to iterator: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(let v): return appendBasic(&iterator, DBusType.byte, v)
        case .boolean(let v): return appendBasic(&iterator, DBusType.boolean, dbus_bool_t(v ? 1 : 0))
        case .int16(let v): return appendBasic(&iterator, DBusType.int16, v)
        case .uint16(let v): return appendBasic(&iterator, DBusType.uint16, v)
        case .int32(let v): return appendBasic(&iterator, DBusType.int32, v)
        case .uint32(let v): return appendBasic(&iterator, DBusType.uint32, v)
        case .int64(let v): return appendBasic(&iterator, DBusType.int64, v)
        case .uint64(let v): return appendBasic(&iterator, DBusType.uint64, v)
        case .double(let v): return appendBasic(&iterator, DBusType.double, v)
        case .unixFD(let v): return appendBasic(&iterator, DBusType.unixFD, v)
        case .string(let v): return appendText(&iterator, DBusType.string, v)
        case .objectPath(let v): return appendText(&iterator, DBusType.objectPath, v.rawValue)
        case .signature(let v): return appendText(&iterator, DBusType.signature, v)
        case .array(let element, let values):
            return appendContainer(&iterator, DBusType.array, element) { child in
                values.allSatisfy { write($0, to: &child) }
            }
        case .dictionary(let key, let valueType, let entries):
            return appendContainer(&iterator, DBusType.array, "{" + key + valueType + "}") { child in
                entries.allSatisfy { entry in
                    appendContainer(&child, DBusType.dictEntry, nil) { pair in
                        write(entry.key, to: &pair) && write(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            return appendContainer(&iterator, DBusType.structure, nil) { child in
                fields.allSatisfy { write($0, to: &child) }
            }
        case .variant(let inner):
            return appendContainer(&iterator, DBusType.variant, inner.signature) { child in
                write(inner, to: &child)
            }
        }
    }
}

/// Name checks from the D-Bus specification, backed by libdbus.
public enum DBusNames {
    /// True when `name` is a valid error name.
    public static func isValidErrorName(_ name: String) -> Bool {
        !name.utf8.contains(0) && dbus_validate_error_name(name, nil) != 0
    }

    /// True when `name` is a valid interface name.
    public static func isValidInterface(_ name: String) -> Bool {
        !name.utf8.contains(0) && dbus_validate_interface(name, nil) != 0
    }

    /// True when `name` is a valid member name.
    public static func isValidMember(_ name: String) -> Bool {
        !name.utf8.contains(0) && dbus_validate_member(name, nil) != 0
    }

    /// True when `name` is a valid bus name (unique or well-known).
    public static func isValidBusName(_ name: String) -> Bool {
        !name.utf8.contains(0) && dbus_validate_bus_name(name, nil) != 0
    }
}

/// Decodes a message body into values, at most `budget` of them.
private struct BodyReader {
    /// How many more values may be decoded.
    var budget: Int
    /// True once the body held more values than the budget allowed.
    private(set) var exceeded = false

    init(budget: Int) { self.budget = budget }

    private func basic<T: BitwiseCopyable>(_ iterator: inout DBusMessageIter, _ zero: T) -> T {
        var value = zero
        withUnsafeMutableBytes(of: &value) { dbus_message_iter_get_basic(&iterator, $0.baseAddress) }
        return value
    }

    private func text(_ iterator: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iterator, &pointer)
        return pointer.map { String(cString: $0) } ?? ""
    }

    /// The signature of the value the iterator points at.
    private func currentSignature(_ iterator: inout DBusMessageIter) -> String {
        guard let raw = dbus_message_iter_get_signature(&iterator) else { return "" }
        defer { dbus_free(raw) }
        return String(cString: raw)
    }

    /// The value the iterator points at; `.structure([])` once the budget is spent.
    mutating func read(_ iterator: inout DBusMessageIter) -> DBusValue {
        guard budget > 0 else {
            exceeded = true
            return .structure([])
        }
        budget -= 1
        switch dbus_message_iter_get_arg_type(&iterator) {
        case DBusType.byte: return .byte(basic(&iterator, UInt8(0)))
        case DBusType.boolean: return .boolean(basic(&iterator, dbus_bool_t(0)) != 0)
        case DBusType.int16: return .int16(basic(&iterator, Int16(0)))
        case DBusType.uint16: return .uint16(basic(&iterator, UInt16(0)))
        case DBusType.int32: return .int32(basic(&iterator, Int32(0)))
        case DBusType.uint32: return .uint32(basic(&iterator, UInt32(0)))
        case DBusType.int64: return .int64(basic(&iterator, Int64(0)))
        case DBusType.uint64: return .uint64(basic(&iterator, UInt64(0)))
        case DBusType.double: return .double(basic(&iterator, Double(0)))
        case DBusType.unixFD:
            let descriptor = basic(&iterator, Int32(-1))
            if descriptor >= 0 { close(descriptor) }
            return .unixFD(-1)
        case DBusType.string: return .string(text(&iterator))
        case DBusType.objectPath: return .objectPath(ObjectPath(trusted: text(&iterator)))
        case DBusType.signature: return .signature(text(&iterator))
        case DBusType.array: return readArray(&iterator)
        case DBusType.structure: return .structure(readChildren(&iterator))
        case DBusType.variant: return .variant(readChildren(&iterator).first ?? .structure([]))
        default: return .structure([])
        }
    }

    private mutating func readChildren(_ iterator: inout DBusMessageIter) -> [DBusValue] {
        var child = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &child)
        var values: [DBusValue] = []
        while !exceeded && dbus_message_iter_get_arg_type(&child) != DBusType.invalid {
            values.append(read(&child))
            dbus_message_iter_next(&child)
        }
        return values
    }

    private mutating func readArray(_ iterator: inout DBusMessageIter) -> DBusValue {
        let elementSignature = String(currentSignature(&iterator).dropFirst())
        guard dbus_message_iter_get_element_type(&iterator) == DBusType.dictEntry else {
            return .array(element: elementSignature, readChildren(&iterator))
        }
        let inner = elementSignature.dropFirst().dropLast()
        let keySignature = String(inner.prefix(1))
        let valueSignature = String(inner.dropFirst())
        var entries: [DBusValue.DictEntry] = []
        var child = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &child)
        while !exceeded && dbus_message_iter_get_arg_type(&child) == DBusType.dictEntry {
            let pair = readChildren(&child)
            if pair.count == 2 { entries.append(DBusValue.DictEntry(pair[0], pair[1])) }
            dbus_message_iter_next(&child)
        }
        return .dictionary(key: keySignature, value: valueSignature, entries)
    }
}
