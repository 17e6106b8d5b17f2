/// A D-Bus error: a reverse-DNS error name and a human message.
///
/// It is what a method call fails with and what a failed outgoing call throws; the name is never flattened into
/// the message, so callers can match on it.
public struct DBusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The error name, such as `org.freedesktop.DBus.Error.AccessDenied`.
    public var name: String
    /// The human-readable message.
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { "\(name): \(message)" }

    /// `org.freedesktop.DBus.Error.Failed`.
    public static func failed(_ message: String) -> DBusError { .init(name: Name.failed, message: message) }
    /// `org.freedesktop.DBus.Error.AccessDenied`.
    public static func accessDenied(_ message: String) -> DBusError { .init(name: Name.accessDenied, message: message) }
    /// `org.freedesktop.DBus.Error.InvalidArgs`.
    public static func invalidArgs(_ message: String) -> DBusError { .init(name: Name.invalidArgs, message: message) }
    /// `org.freedesktop.DBus.Error.UnknownMethod`.
    public static func unknownMethod(_ message: String) -> DBusError {
        .init(name: Name.unknownMethod, message: message)
    }
    /// `org.freedesktop.DBus.Error.LimitsExceeded`.
    public static func limitsExceeded(_ message: String) -> DBusError {
        .init(name: Name.limitsExceeded, message: message)
    }

    /// Well-known error names from the D-Bus specification.
    public enum Name {
        public static let failed = "org.freedesktop.DBus.Error.Failed"
        public static let noMemory = "org.freedesktop.DBus.Error.NoMemory"
        public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
        public static let nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"
        public static let noReply = "org.freedesktop.DBus.Error.NoReply"
        public static let timeout = "org.freedesktop.DBus.Error.Timeout"
        public static let disconnected = "org.freedesktop.DBus.Error.Disconnected"
        public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
        public static let invalidSignature = "org.freedesktop.DBus.Error.InvalidSignature"
        public static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
        public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
        public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
        public static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
        public static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
        public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
        public static let limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"
        public static let notSupported = "org.freedesktop.DBus.Error.NotSupported"
    }
}
