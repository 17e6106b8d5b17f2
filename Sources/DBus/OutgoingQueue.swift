import CDBus

extension Connection {
    /// The bytes of the messages libdbus holds for the bus and has not written yet (`dbus_connection_get_outgoing_size`):
    /// it grows when the bus reads the connection slower than the process sends.
    public var outgoingBytes: Int { Int(dbus_connection_get_outgoing_size(raw)) }
}
