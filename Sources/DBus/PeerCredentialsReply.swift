/// What the bus knows of a connection's peer (`org.freedesktop.DBus.GetConnectionCredentials`).
public struct PeerCredentialsReply: Sendable, Equatable {
    /// `UnixUserID`.
    public var uid: UInt32
    /// `ProcessID`, the process that connected, when the bus knows it.
    public var pid: UInt32?
    /// `LinuxSecurityLabel`, the peer's LSM label as the kernel gave it (for AppArmor, `label (mode)` and NUL
    /// bytes); empty when the bus gave none.
    public var securityLabel: [UInt8]

    /// A peer's credentials.
    public init(uid: UInt32, pid: UInt32?, securityLabel: [UInt8] = []) {
        self.uid = uid
        self.pid = pid
        self.securityLabel = securityLabel
    }
}
