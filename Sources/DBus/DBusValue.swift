import CDBus

/// One D-Bus value of any type, as sent or received in a message body.
///
/// Containers carry the signature of their elements so that empty arrays and dictionaries keep their type.
public indirect enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(ObjectPath)
    /// A type signature (`g`), such as `a{sv}`.
    case signature(String)
    /// A Unix file descriptor (`h`); a received one is owned by the receiver, which must close it.
    case unixFD(Int32)
    /// An array of values that all have the single complete type `element`.
    case array(element: String, [DBusValue])
    /// A dictionary (`a{kv}`): `key` is a basic type's signature, `value` a single complete type.
    case dictionary(key: String, value: String, [DictEntry])
    /// A structure of one or more values.
    case structure([DBusValue])
    /// A value that carries its own type.
    case variant(DBusValue)

    /// One key/value pair of a ``DBusValue/dictionary(key:value:_:)``.
    public struct DictEntry: Sendable, Hashable {
        public var key: DBusValue
        public var value: DBusValue
        public init(_ key: DBusValue, _ value: DBusValue) {
            self.key = key
            self.value = value
        }
    }

    /// The value's single complete type signature.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }

    /// A string-keyed dictionary of variants (`a{sv}`), the shape of `GetAll` and option maps; keys are sorted.
    public static func vardict(_ entries: [String: DBusValue]) -> DBusValue {
        .dictionary(
            key: "s", value: "v",
            entries.sorted { $0.key < $1.key }.map { DictEntry(.string($0.key), .variant($0.value)) })
    }

    /// An array of strings (`as`).
    public static func strings(_ values: [String]) -> DBusValue { .array(element: "s", values.map(DBusValue.string)) }

    /// The value inside a variant, or the value itself.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    /// The payload of a `y`.
    public var byte: UInt8? { if case .byte(let v) = self { v } else { nil } }
    /// The payload of a `b`.
    public var bool: Bool? { if case .boolean(let v) = self { v } else { nil } }
    /// The payload of a `u`.
    public var uint32: UInt32? { if case .uint32(let v) = self { v } else { nil } }
    /// The payload of an `i`.
    public var int32: Int32? { if case .int32(let v) = self { v } else { nil } }
    /// The payload of a `t`.
    public var uint64: UInt64? { if case .uint64(let v) = self { v } else { nil } }
    /// The payload of an `x`.
    public var int64: Int64? { if case .int64(let v) = self { v } else { nil } }
    /// The payload of a `d`.
    public var double: Double? { if case .double(let v) = self { v } else { nil } }
    /// The payload of an `s`.
    public var string: String? { if case .string(let v) = self { v } else { nil } }
    /// The payload of an `o`.
    public var objectPath: ObjectPath? { if case .objectPath(let v) = self { v } else { nil } }
    /// The fields of a structure.
    public var fields: [DBusValue]? { if case .structure(let v) = self { v } else { nil } }
    /// The elements of an array.
    public var elements: [DBusValue]? { if case .array(_, let v) = self { v } else { nil } }

    /// The entries of an `a{s*}` dictionary keyed by string, variants unwrapped.
    public var stringKeyedEntries: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = self else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.string else { return nil }
            result[key] = entry.value.unwrapped
        }
        return result
    }

    /// Checks that the value can be marshalled: container element types match their declared signatures,
    /// strings contain no NUL and signatures are valid.
    public func validate() throws(DBusError) {
        switch self {
        case .string(let text):
            if text.utf8.contains(0) { throw .invalidArgs("string contains a NUL byte") }
        case .signature(let text):
            guard Signature.isValid(text) else { throw .invalidArgs("invalid signature \"\(text)\"") }
        case .array(let element, let values):
            guard Signature.isSingleCompleteType(element) else {
                throw .invalidArgs("invalid array element type \"\(element)\"")
            }
            for value in values {
                guard value.signature == element else {
                    throw .invalidArgs("array of \"\(element)\" holds a \"\(value.signature)\"")
                }
                try value.validate()
            }
        case .dictionary(let key, let value, let entries):
            guard Signature.isBasicType(key), Signature.isSingleCompleteType(value) else {
                throw .invalidArgs("invalid dictionary type \"a{\(key)\(value)}\"")
            }
            for entry in entries {
                guard entry.key.signature == key, entry.value.signature == value else {
                    throw .invalidArgs("dictionary entry does not match \"a{\(key)\(value)}\"")
                }
                try entry.key.validate()
                try entry.value.validate()
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw .invalidArgs("empty structure") }
            for field in fields { try field.validate() }
        case .variant(let inner):
            try inner.validate()
        default:
            break
        }
    }
}

/// Signature checks, backed by libdbus's validator.
public enum Signature {
    /// True when `text` is a valid signature: zero or more single complete types.
    public static func isValid(_ text: String) -> Bool {
        !text.utf8.contains(0) && text.utf8.count <= 255 && dbus_signature_validate(text, nil) != 0
    }

    /// True when `text` is exactly one complete type.
    public static func isSingleCompleteType(_ text: String) -> Bool {
        !text.utf8.contains(0) && text.utf8.count <= 255 && dbus_signature_validate_single(text, nil) != 0
    }

    /// True when `text` is one basic (non-container) type, usable as a dictionary key.
    public static func isBasicType(_ text: String) -> Bool {
        text.utf8.count == 1 && "ybnqiuxtdsogh".utf8.contains(text.utf8.first!)
    }
}
