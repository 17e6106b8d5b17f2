extension AppIdentityParsing {
    /// The app of a snap whose transient scope holds a process, as `<instance>.<app>`, from `text`, the content of
    /// its `/proc/PID/cgroup`; `nil` when no snap scope holds it.
    ///
    /// `snap run` starts each app in a scope of the user's manager named after its security tag and a random UUID,
    /// the tag escaped as systemd escapes unit names (`-` as `\x2d`): `snap.firefox.firefox-<uuid>.scope`. Where
    /// AppArmor confines the snap, its label says the same (``snapApp(securityLabel:)``); where AppArmor is off,
    /// the scope is all that tells a snap's app, which still runs in snapd's sandbox of namespaces and seccomp.
    ///
    /// - Throws: ``AppIdentityError`` for a scope whose tag is a hook's or not an app's, or when the hierarchies
    ///   name different apps.
    public static func snapScopeApp(cgroup text: String) throws(AppIdentityError) -> String? {
        try snapScopeApp(CgroupPlacement.placements(in: text))
    }

    /// ``snapScopeApp(cgroup:)`` of the placements read from a process's `/proc/PID/cgroup`.
    static func snapScopeApp(_ placements: [CgroupPlacement]) throws(AppIdentityError) -> String? {
        var found: String??
        for placement in placements {
            var app: String?
            for component in placement.components {
                if let scoped = try snapApp(ofScope: component) { app = scoped }
            }
            if let found, found != app {
                throw AppIdentityError(.snapScopesDisagree(first: found, second: app))
            }
            found = app
        }
        return found ?? nil
    }

    /// The app of `name` when it is a snap app's scope.
    private static func snapApp(ofScope name: ArraySlice<UInt8>) throws(AppIdentityError) -> String? {
        let suffix = Array(".scope".utf8)
        // "-" and a UUID, 8-4-4-4-12 lower-case hex digits.
        let uuidLength = 37
        guard name.starts(with: "snap.".utf8), name.count > suffix.count + uuidLength,
            name.suffix(suffix.count).elementsEqual(suffix)
        else { return nil }
        let body = name.dropLast(suffix.count)
        let uuid = body.suffix(uuidLength)
        guard isUUID(uuid.dropFirst()), uuid.first == UInt8(ascii: "-"),
            let tag = UnitNameEscaping.unescape(body.dropLast(uuidLength))
        else { return nil }
        return try snapApp(securityLabel: tag)
    }

    /// True for `8-4-4-4-12` lower-case hex digits.
    private static func isUUID(_ text: ArraySlice<UInt8>) -> Bool {
        let groups = text.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        return groups.map(\.count) == [8, 4, 4, 4, 12]
            && groups.allSatisfy { $0.allSatisfy { NameBytes.isDigit($0) || (0x61...0x66).contains($0) } }
    }
}
