extension AppIdentityParsing {
    /// The Flatpak app of a process, from `text`, the content of its `/proc/PID/cgroup`; `nil` when no Flatpak
    /// scope holds it.
    ///
    /// `flatpak run` moves the app into a transient systemd user scope, `app-flatpak-<id>-<pid>.scope` under the
    /// user manager's `app.slice`, `-` and any byte but letters, digits, `_`, `.` and `:` in the id escaped as
    /// `\xNN` (older releases wrote `flatpak-<id>-<pid>.scope`, unescaped; both are read, the id running to the
    /// last `-`). The scope may be anywhere on the path, and a cgroup below it is still the app's.
    ///
    /// Every layout of `/proc/PID/cgroup` a Debian system may have is read: cgroup v2 alone
    /// (`0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-flatpak-org.gnome.Maps-12345.scope`), and
    /// hybrid, where the `name=systemd` v1 line may stand anywhere among the controllers' and the `0::` line may be
    /// there or not (see `CgroupPlacement`).
    ///
    /// - Throws: ``AppIdentityError`` when a Flatpak scope's name cannot be read or its id is not a valid
    ///   application id, when one path holds the scopes of two apps, or when the hierarchies disagree.
    public static func flatpakApp(cgroup text: String) throws(AppIdentityError) -> String? {
        try flatpakApp(CgroupPlacement.placements(in: text))
    }

    /// ``flatpakApp(cgroup:)`` of the placements read from a process's `/proc/PID/cgroup`.
    static func flatpakApp(_ placements: [CgroupPlacement]) throws(AppIdentityError) -> String? {
        var first: (hierarchy: String, app: String?)?
        for placement in placements {
            let app = try flatpakApp(on: placement.components)
            guard let first else {
                first = (placement.hierarchy, app)
                continue
            }
            guard first.app == app else {
                throw AppIdentityError(
                    .hierarchiesDisagree(
                        first: first.hierarchy, firstApp: first.app, second: placement.hierarchy, secondApp: app))
            }
        }
        return first?.app
    }

    /// The app of the outermost Flatpak scope on a cgroup path; one inside it must be of the same app.
    private static func flatpakApp(on components: [ArraySlice<UInt8>]) throws(AppIdentityError) -> String? {
        var outer: (scope: String, app: String)?
        for component in components {
            guard let app = try flatpakApp(ofScope: component) else { continue }
            if let outer {
                guard outer.app == app else {
                    throw AppIdentityError(
                        .nestedFlatpakScopes(outer: outer.scope, inner: String(decoding: component, as: UTF8.self)))
                }
            } else {
                outer = (String(decoding: component, as: UTF8.self), app)
            }
        }
        return outer?.app
    }

    /// The prefixes of Flatpak's scopes, newest first.
    private static let flatpakScopePrefixes = [Array("app-flatpak-".utf8), Array("flatpak-".utf8)]
    private static let scopeSuffix = Array(".scope".utf8)

    /// The app of `name` when it is a Flatpak scope's; `nil` when it is no Flatpak scope.
    private static func flatpakApp(ofScope name: ArraySlice<UInt8>) throws(AppIdentityError) -> String? {
        guard name.count > scopeSuffix.count, name.suffix(scopeSuffix.count).elementsEqual(scopeSuffix),
            let prefix = flatpakScopePrefixes.first(where: { name.starts(with: $0) })
        else { return nil }
        let scope = String(decoding: name, as: UTF8.self)
        let body = name.dropFirst(prefix.count).dropLast(scopeSuffix.count)
        guard let dash = body.lastIndex(of: UInt8(ascii: "-")), dash > body.startIndex,
            body.index(after: dash) < body.endIndex, body[body.index(after: dash)...].allSatisfy(NameBytes.isDigit),
            let id = UnitNameEscaping.unescape(body[..<dash])
        else { throw AppIdentityError(.malformedFlatpakScope(scope: scope)) }
        let app = String(decoding: id, as: UTF8.self)
        guard isValidApplicationID(app) else { throw AppIdentityError(.invalidFlatpakID(app, scope: scope)) }
        return app
    }
}
