import DBus

/// Where a wireless daemon lists access points: an `ao` property naming one object per access point, each read
/// with one `GetAll` (``WirelessDaemon/accessPoints(of:owner:in:parse:)``).
struct AccessPointList: Sendable {
    /// The list property, as `BSSs`.
    let property: String
    /// The interface that has it.
    let interface: String
    /// The interface of the objects it names.
    let elementInterface: String
    /// One of those objects in log lines, as `BSS`.
    let element: String
    /// Several of them in log lines, as `BSSs`.
    let elements: String
    /// At most this many of one list are read.
    let maximum: Int
}
