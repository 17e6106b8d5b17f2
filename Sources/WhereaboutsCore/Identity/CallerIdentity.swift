/// What the system says about the process behind a connection, read once when the connection is first seen: the
/// sandbox it runs in, whether it is the desktop portal, and the desktop file its unit is named after.
public struct CallerIdentity: Sendable, Equatable {
    /// The app its sandbox names, or ``AppIdentity/unconfined``.
    public var sandbox: AppIdentity
    /// True when it is the user's desktop portal outside any sandbox (``AppIdentityParsing/isDesktopPortal(cgroup:uid:)``).
    public var isDesktopPortal: Bool
    /// The desktop file id its systemd user unit is named after (``AppIdentityParsing/desktopHint(cgroup:)``): shown,
    /// never used to grant.
    public var desktopHint: String?

    /// An identity with these parts.
    public init(sandbox: AppIdentity, isDesktopPortal: Bool = false, desktopHint: String? = nil) {
        self.sandbox = sandbox
        self.isDesktopPortal = isDesktopPortal
        self.desktopHint = desktopHint
    }
}

extension AppIdentityParsing {
    /// The identity of user `uid`'s process whose `/proc/PID/cgroup` is `cgroup` and whose connection's security
    /// label is `securityLabel` (empty when the bus gave none).
    ///
    /// - Throws: ``AppIdentityError`` when either text is unreadable as ``flatpakApp(cgroup:)``,
    ///   ``snapApp(securityLabel:)`` and ``snapScopeApp(cgroup:)`` say, when they name two sandboxes at once, or
    ///   when the label and the scope name two snap apps.
    public static func caller(cgroup: String, securityLabel: [UInt8], uid: UInt32) throws(AppIdentityError)
        -> CallerIdentity
    {
        // Read once: the sandboxes, the portal's unit and the hint are each told from the same placements.
        let placements = CgroupPlacement.placements(in: cgroup)
        let flatpak = try flatpakApp(placements)
        let labelled = try snapApp(securityLabel: securityLabel)
        let scoped = try snapScopeApp(placements)
        if let labelled, let scoped, labelled != scoped {
            throw AppIdentityError(.snapLabelAndScopeDisagree(label: labelled, scope: scoped))
        }
        let snap = labelled ?? scoped
        let sandbox: AppIdentity
        switch (flatpak, snap) {
        case (let flatpak?, let snap?): throw AppIdentityError(.twoSandboxes(flatpak: flatpak, snap: snap))
        case (let flatpak?, nil): sandbox = .flatpak(flatpak)
        case (nil, let snap?): sandbox = .snap(snap)
        case (nil, nil): sandbox = .unconfined
        }
        return CallerIdentity(
            sandbox: sandbox, isDesktopPortal: sandbox == .unconfined && isDesktopPortal(placements, uid: uid),
            desktopHint: desktopHint(placements))
    }
}
