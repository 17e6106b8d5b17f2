/// Asks the system's policy (polkit) whether a connection may do an action: the service's admission asks it, the
/// Polkit module's `PolkitAuthority` answers it.
///
/// The daemon passes polkit; a service made without one lets the configuration, the stored decisions and the
/// users' GeoClue agents decide (``AuthorisationRule/statusWithoutPolkit(stored:configuration:agentAsks:)``).
public protocol Authoriser: AnyObject, Sendable {
    /// polkit's answer for `action` about the connection `busName`, or a message saying why there is none.
    func check(busName: String, action: String, details: [String: String], interactive: Bool, timeout: Duration)
        async -> Result<PolkitAnswer, AuthorisationFailure>
}

/// No answer from the policy: it is absent, failed or too slow, or the caller's user has too many checks waiting.
/// The service then denies.
public struct AuthorisationFailure: Error, Sendable {
    public var message: String
    /// True when the check was refused because the caller's user has too many waiting: the caller's call fails
    /// with `LimitsExceeded`, not `AccessDenied`.
    public var limitsExceeded: Bool

    public init(_ message: String, limitsExceeded: Bool = false) {
        self.message = message
        self.limitsExceeded = limitsExceeded
    }
}
