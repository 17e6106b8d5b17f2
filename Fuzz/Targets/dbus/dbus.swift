import CDBus
import DBus
import FuzzSupport

/// D-Bus messages as they arrive from the bus: bytes demarshalled by libdbus (which validates them), then the
/// header and body decoded by `Message` into `DBusValue`s. Every decoded body must marshal again and decode to
/// the same values. (The service refuses messages that carry descriptors before decoding them; see
/// `Connection`.)
///
/// Mutations easily break the header's body-length field, after which libdbus refuses everything; so the field
/// is set to what the input actually holds before demarshalling.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDBusMessage(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var bytes = Array(UnsafeBufferPointer(start: data, count: size))
    fitBodyLength(&bytes)
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    let demarshalled = bytes.withUnsafeBufferPointer { buffer in
        buffer.withMemoryRebound(to: CChar.self) { dbus_message_demarshal($0.baseAddress, Int32($0.count), &error) }
    }
    guard let raw = demarshalled else {
        dbus_error_free(&error)
        return 0
    }
    let message = Message(owning: raw)
    _ = (message.kind, message.sender, message.destination, message.path, message.interface, message.member)
    _ = (message.errorName, message.signature, message.noReplyExpected, message.allowsInteractiveAuthorization)
    _ = message.error
    let arguments = message.arguments()
    precondition(arguments.map(\.signature).joined() == message.signature, "decoded values do not match the signature")
    // A `h` names a descriptor the message does not carry (demarshalled bytes carry none): libdbus reads it as -1,
    // which cannot be sent.
    guard !arguments.contains(where: holdsDescriptor) else { return 0 }

    let copy: Message
    do {
        copy = try Message.signal(path: ObjectPath(trusted: "/fuzz"), interface: "org.example.Fuzz", member: "Copy")
        try copy.append(arguments)
    } catch {
        preconditionFailure("decoded values cannot be sent again: \(error)")
    }
    precondition(copy.signature == message.signature, "a re-encoded body has another signature")
    precondition(sameValues(copy.arguments(), arguments), "a re-encoded body decodes to other values")
    return 0
}

/// Sets the body length in a message header to the bytes that follow the header, when the input is long enough
/// to have a header.
private func fitBodyLength(_ bytes: inout [UInt8]) {
    guard bytes.count >= 16, bytes[0] == UInt8(ascii: "l") || bytes[0] == UInt8(ascii: "B") else { return }
    let littleEndian = bytes[0] == UInt8(ascii: "l")
    func read(_ offset: Int) -> Int {
        let fields = bytes[offset..<offset + 4].map(Int.init)
        return littleEndian
            ? fields[0] | fields[1] << 8 | fields[2] << 16 | fields[3] << 24
            : fields[3] | fields[2] << 8 | fields[1] << 16 | fields[0] << 24
    }
    let headerLength = 16 + (read(12) + 7) / 8 * 8
    guard headerLength <= bytes.count else { return }
    let bodyLength = UInt32(bytes.count - headerLength)
    for index in 0..<4 {
        let shift = littleEndian ? index * 8 : (3 - index) * 8
        bytes[4 + index] = UInt8(truncatingIfNeeded: bodyLength >> shift)
    }
}

/// True when a `h` occurs anywhere in the value, variants included.
private func holdsDescriptor(_ value: DBusValue) -> Bool {
    switch value {
    case .unixFD: true
    case .array(_, let elements): elements.contains(where: holdsDescriptor)
    case .dictionary(_, _, let entries): entries.contains { holdsDescriptor($0.key) || holdsDescriptor($0.value) }
    case .structure(let fields): fields.contains(where: holdsDescriptor)
    case .variant(let inner): holdsDescriptor(inner)
    default: false
    }
}

/// Equality of decoded values where a NaN equals a NaN with the same bits.
private func sameValues(_ lhs: [DBusValue], _ rhs: [DBusValue]) -> Bool {
    lhs.count == rhs.count && zip(lhs, rhs).allSatisfy(sameValue)
}

private func sameValue(_ lhs: DBusValue, _ rhs: DBusValue) -> Bool {
    switch (lhs, rhs) {
    case (.double(let a), .double(let b)): a.bitPattern == b.bitPattern
    case (.array(let a, let x), .array(let b, let y)): a == b && sameValues(x, y)
    case (.dictionary(let k1, let v1, let x), .dictionary(let k2, let v2, let y)):
        k1 == k2 && v1 == v2 && x.count == y.count
            && zip(x, y).allSatisfy { sameValue($0.key, $1.key) && sameValue($0.value, $1.value) }
    case (.structure(let x), .structure(let y)): sameValues(x, y)
    case (.variant(let a), .variant(let b)): sameValue(a, b)
    default: lhs == rhs
    }
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzDBusMessage) }
    }
#endif
