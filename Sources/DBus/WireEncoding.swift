import CDBus

/// Writes a whole signal in the D-Bus wire format (little-endian), for libdbus to take in one validating pass.
///
/// Building a signal through libdbus's message API rewrites the header for every field set and every top-level
/// argument appended, walking what is already there; that was most of the service's cost per delivered fix.
/// Taking finished bytes with `dbus_message_demarshal` costs about half: libdbus still checks every field, name,
/// path, string and signature, so a message that reaches the bus is as valid as one it built itself.
struct WireEncoder {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    /// The message: fixed header, header fields, padding, then `body` (already encoded from offset 0 of a buffer
    /// that starts 8-aligned, so its alignment holds when appended at the 8-aligned body offset).
    ///
    /// The serial is 1 here because a message without one does not load; ``Message/signal`` clears it, so that
    /// the connection gives the message its own when it is sent.
    static func signal(
        path: String, interface: String, member: String, destination: String?, signature: String, body: [UInt8]
    ) -> [UInt8] {
        var header = WireEncoder(capacity: 128 + body.count)
        header.bytes += [UInt8(ascii: "l"), UInt8(DBUS_MESSAGE_TYPE_SIGNAL), 0, 1]
        header.uint32(UInt32(body.count))
        header.uint32(1)
        header.array(elementAlignment: 8) { fields in
            fields.field(UInt8(DBUS_HEADER_FIELD_PATH), "o", text: path)
            fields.field(UInt8(DBUS_HEADER_FIELD_INTERFACE), "s", text: interface)
            fields.field(UInt8(DBUS_HEADER_FIELD_MEMBER), "s", text: member)
            if let destination { fields.field(UInt8(DBUS_HEADER_FIELD_DESTINATION), "s", text: destination) }
            if !signature.isEmpty {
                fields.align(8)
                fields.bytes += [UInt8(DBUS_HEADER_FIELD_SIGNATURE)]
                fields.signature("g")
                fields.signature(signature)
            }
        }
        header.align(8)
        header.bytes += body
        return header.bytes
    }

    /// Encodes `values` one after the other, as a message body.
    static func body(_ values: [DBusValue]) -> [UInt8] {
        var encoder = WireEncoder(capacity: 256)
        for value in values { encoder.write(value) }
        return encoder.bytes
    }

    private mutating func field(_ code: UInt8, _ type: String, text: String) {
        align(8)
        bytes.append(code)
        signature(type)
        string(text)
    }

    mutating func write(_ value: DBusValue) {
        switch value {
        case .byte(let v): bytes.append(v)
        case .boolean(let v): uint32(v ? 1 : 0)
        case .int16(let v): fixed(UInt16(bitPattern: v))
        case .uint16(let v): fixed(v)
        case .int32(let v): fixed(UInt32(bitPattern: v))
        case .uint32(let v): fixed(v)
        case .int64(let v): fixed(UInt64(bitPattern: v))
        case .uint64(let v): fixed(v)
        case .double(let v): fixed(v.bitPattern)
        // Only an index into the fds sent beside the message; a signal from here never carries one, and a
        // message whose header counts none fails to load with such an index in it.
        case .unixFD(let v): fixed(UInt32(bitPattern: v))
        case .string(let v): string(v)
        case .objectPath(let v): string(v.rawValue)
        case .signature(let v): signature(v)
        case .array(let element, let values):
            array(elementAlignment: Self.alignment(of: element)) { encoder in
                for value in values { encoder.write(value) }
            }
        case .dictionary(_, _, let entries):
            array(elementAlignment: 8) { encoder in
                for entry in entries {
                    encoder.align(8)
                    encoder.write(entry.key)
                    encoder.write(entry.value)
                }
            }
        case .structure(let fields):
            align(8)
            for field in fields { write(field) }
        case .variant(let inner):
            signature(inner.signature)
            write(inner)
        }
    }

    /// An array: its length, the padding to its first element (counted outside the length, as the
    /// specification says, even when there are no elements), then the elements `body` writes.
    private mutating func array(elementAlignment: Int, _ body: (inout WireEncoder) -> Void) {
        align(4)
        let lengthOffset = bytes.count
        uint32(0)
        align(elementAlignment)
        let start = bytes.count
        body(&self)
        let length = UInt32(truncatingIfNeeded: bytes.count - start)
        withUnsafeBytes(of: length.littleEndian) { raw in
            for (index, byte) in raw.enumerated() { bytes[lengthOffset + index] = byte }
        }
    }

    private mutating func string(_ text: String) {
        uint32(UInt32(truncatingIfNeeded: text.utf8.count))
        bytes += text.utf8
        bytes.append(0)
    }

    private mutating func signature(_ text: String) {
        bytes.append(UInt8(truncatingIfNeeded: text.utf8.count))
        bytes += text.utf8
        bytes.append(0)
    }

    private mutating func uint32(_ value: UInt32) { fixed(value) }

    private mutating func fixed<T: FixedWidthInteger>(_ value: T) {
        align(MemoryLayout<T>.size)
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    private mutating func align(_ boundary: Int) {
        let remainder = bytes.count % boundary
        if remainder != 0 { bytes += repeatElement(0, count: boundary - remainder) }
    }

    /// The alignment of a value whose single complete type `signature` is.
    private static func alignment(of signature: String) -> Int {
        switch signature.utf8.first {
        case UInt8(ascii: "n"), UInt8(ascii: "q"): 2
        case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "("), UInt8(ascii: "{"): 8
        case UInt8(ascii: "y"), UInt8(ascii: "g"), UInt8(ascii: "v"): 1
        default: 4
        }
    }
}
