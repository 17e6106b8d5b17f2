import DBus
import Loop
import WhereaboutsCore

/// An app's authorisation, as `io.github.whereabouts1.Client.AuthorisationStatus` reports it.
public enum AuthorisationStatus: String, Sendable, CaseIterable {
    case notDetermined, restricted, denied, authorisedWhenInUse, authorisedAlways
}

/// The grant an app asks for.
public enum AuthorisationRequest: String, Sendable {
    case whenInUse = "when-in-use"
    case always
}

extension LocationManager {
    /// The app's authorisation for this user, checked now without asking anyone (Whereabouts only).
    public func authorisationStatus() async throws(LocationError) -> AuthorisationStatus {
        guard try await isWhereabouts() else { throw .unsupported("authorisation status") }
        let client = try await makeClient(accuracy: .exact)
        defer { deleteClient(client) }
        let reply = try await call(client, Self.client, "CheckAuthorisation")
        return AuthorisationStatus(rawValue: reply.first?.string ?? "") ?? .notDetermined
    }

    /// Asks the user, through polkit, for `request`; returns the resulting status. An app that already has it,
    /// or that policy restricts, is not asked (Whereabouts only).
    public func requestAuthorisation(_ request: AuthorisationRequest, approximate: Bool = false)
        async throws(LocationError) -> AuthorisationStatus
    {
        guard try await isWhereabouts() else { throw .unsupported("authorisation requests") }
        let client = try await makeClient(accuracy: .exact)
        defer { deleteClient(client) }
        let options: [String: DBusValue] = approximate ? ["approximate": .boolean(true)] : [:]
        let reply = try await call(
            client, Self.client, "RequestAuthorisation", [.string(request.rawValue), .vardict(options)],
            timeout: Self.promptTimeout)
        return AuthorisationStatus(rawValue: reply.first?.string ?? "") ?? .notDetermined
    }

    /// The app's authorisation now, then each change, for as long as the sequence is iterated
    /// (`io.github.whereabouts1.Client.AuthorisationStatus` and its `PropertiesChanged`, sent to this connection
    /// alone): a grant revoked, a decision made elsewhere. Whereabouts only.
    public func authorisationStatuses() -> AsyncThrowingStream<AuthorisationStatus, any Error> {
        AsyncThrowingStream { continuation in
            produce(continuation) { () async throws(LocationError) in
                let (ended, endInput) = AsyncStream.makeStream(of: Never.self)
                continuation.onTermination = { _ in endInput.finish() }
                guard try await self.isWhereabouts() else { throw .unsupported("authorisation status") }
                let client = try await self.makeClient(accuracy: .exact)
                var subscriptions: [SignalSubscription] = []
                defer { self.end(client, subscriptions) }
                let changes = StatusChanges(continuation)
                subscriptions.append(
                    try await self.subscribeToService(
                        SignalMatch(
                            path: client, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")
                    ) { message in
                        let arguments = message.arguments()
                        guard arguments.count == 3, arguments[0].string == Self.client,
                            let text = arguments[1].stringKeyedEntries?["AuthorisationStatus"]?.string
                        else { return }
                        changes.yield(AuthorisationStatus(rawValue: text) ?? .notDetermined)
                    })
                let reply = try await self.call(client, Self.client, "CheckAuthorisation")
                changes.yield(AuthorisationStatus(rawValue: reply.first?.string ?? "") ?? .notDetermined)
                for await _ in ended {}
            }
        }
    }
}

/// Passes on a status only when it differs from the one passed on before.
@BusActor
final class StatusChanges {
    private let continuation: AsyncThrowingStream<AuthorisationStatus, any Error>.Continuation
    private var last: AuthorisationStatus?

    init(_ continuation: AsyncThrowingStream<AuthorisationStatus, any Error>.Continuation) {
        self.continuation = continuation
    }

    func yield(_ status: AuthorisationStatus) {
        guard status != last else { return }
        last = status
        continuation.yield(status)
    }
}
