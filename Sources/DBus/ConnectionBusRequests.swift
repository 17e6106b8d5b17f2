import CDBus
import Loop

/// Requests to the bus itself (`org.freedesktop.DBus`): names and peer credentials.
extension Connection {
    /// The reply to `RequestName`.
    public enum RequestNameReply: UInt32, Sendable {
        case primaryOwner = 1
        case inQueue = 2
        case exists = 3
        case alreadyOwner = 4
    }

    /// Asks the bus for the well-known `name`, without queueing or replacement.
    public func requestName(_ name: String) async throws(DBusError) -> RequestNameReply {
        let reply = try await callBus("RequestName", [.string(name), .uint32(UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE))])
        guard let code = reply.first?.uint32, let answer = RequestNameReply(rawValue: code) else {
            throw .failed("unexpected RequestName reply")
        }
        return answer
    }

    /// Hands `completion` the Unix user id, process id and security label of the connection that owns `name`, from
    /// `GetConnectionCredentials`, on the loop thread.
    public func credentials(
        of name: String, completion: @escaping @BusActor (Result<PeerCredentialsReply, DBusError>) -> Void
    ) {
        let message: Message
        do throws(DBusError) {
            message = try busCall("GetConnectionCredentials", [.string(name)])
        } catch {
            completion(.failure(error))
            return
        }
        call(message) { result in
            completion(
                result.flatMap { reply -> Result<PeerCredentialsReply, DBusError> in
                    let entries = reply.arguments().first?.stringKeyedEntries
                    guard let entries, let uid = entries["UnixUserID"]?.uint32 else {
                        return .failure(.failed("the bus gave no credentials for \(name)"))
                    }
                    var label: [UInt8] = []
                    if case .array("y", let bytes)? = entries["LinuxSecurityLabel"] {
                        label = bytes.compactMap(\.byte)
                    }
                    return .success(
                        PeerCredentialsReply(uid: uid, pid: entries["ProcessID"]?.uint32, securityLabel: label))
                })
        }
    }

    private func callBus(_ member: String, _ arguments: [DBusValue]) async throws(DBusError) -> [DBusValue] {
        try await call(try busCall(member, arguments)).arguments()
    }

    /// A call of `member` of the bus itself (`org.freedesktop.DBus`).
    func busCall(_ member: String, _ arguments: [DBusValue]) throws(DBusError) -> Message {
        try Message.methodCall(
            destination: "org.freedesktop.DBus", path: ObjectPath(trusted: "/org/freedesktop/DBus"),
            interface: "org.freedesktop.DBus", member: member, arguments: arguments)
    }
}
