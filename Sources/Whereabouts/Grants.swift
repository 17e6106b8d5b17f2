import DBus
import Loop
import WhereaboutsCore

/// One stored decision, as `ListGrants` reports it.
public struct Grant: Sendable, Equatable {
    public var uid: UInt32
    public var app: String
    /// "always", "when-in-use" or "denied".
    public var decision: String
    public var approximate: Bool
    /// True for a decision about an app the system vouched for (a Flatpak or Snap app, or the desktop portal's),
    /// which no caller merely claiming its id can use.
    public var verified: Bool
}

extension LocationManager {
    /// The stored decisions of this user, or of every user (which needs the management authorisation).
    public func grants(allUsers: Bool = false) async throws(LocationError) -> [Grant] {
        guard try await isWhereabouts() else { throw .unsupported("grants") }
        let reply = try await callManager("ListGrants", [.boolean(allUsers)])
        return (reply.first?.elements ?? []).compactMap { row in
            guard let fields = row.fields, fields.count == 5, let uid = fields[0].uint32, let app = fields[1].string,
                let decision = fields[2].string, let approximate = fields[3].bool, let verified = fields[4].bool
            else { return nil }
            return Grant(uid: uid, app: app, decision: decision, approximate: approximate, verified: verified)
        }
    }

    /// Forgets the decisions of user `uid` about `app`, verified and claimed; another user's needs the management authorisation.
    public func revokeGrant(app: String, uid: UInt32) async throws(LocationError) {
        guard try await isWhereabouts() else { throw .unsupported("grants") }
        _ = try await callManager("RevokeGrant", [.uint32(uid), .string(app)])
    }
}
