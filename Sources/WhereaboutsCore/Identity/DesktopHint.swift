extension AppIdentityParsing {
    /// The desktop file id (without `.desktop`) that the systemd user unit of a process is named after, from
    /// `text`, the content of its `/proc/PID/cgroup`; `nil` when its unit is named after none.
    ///
    /// A hint only, never grounds to grant: a process outside any sandbox names its own unit, and a launcher may
    /// start what it likes in one.
    ///
    /// The unit is the first one below the user manager (`user@<uid>.service`) that is not a slice, as
    /// `sd_pid_get_user_unit` finds it; a process in a terminal's `vte-spawn-….scope`, or outside the user manager,
    /// has no hint. The unit names of the XDG standardization of applications in systemd's
    /// DESKTOP_ENVIRONMENTS.md are read: `app-[<launcher>-]<ApplicationID>-<RANDOM>.scope` and
    /// `app-[<launcher>-]<ApplicationID>[@<RANDOM>].service`, the id escaped (`-` as `\x2d`) so that a `-` left
    /// in the name separates the launcher (letters and digits) from the id, and systemd 246 and 247's
    /// `app-<ApplicationID>-autostart.service`. The hint has 1 to 255 bytes of ASCII letters, digits, `.`, `_` and
    /// `-`, starting with a letter, a digit or `_`; the two hierarchies of a hybrid system must give the same one.
    public static func desktopHint(cgroup text: String) -> String? {
        desktopHint(CgroupPlacement.placements(in: text))
    }

    /// ``desktopHint(cgroup:)`` of the placements read from a process's `/proc/PID/cgroup`.
    static func desktopHint(_ placements: [CgroupPlacement]) -> String? {
        let hints = placements.map { desktopHint(on: $0.components) }
        guard let first = hints.first, hints.allSatisfy({ $0 == first }) else { return nil }
        return first
    }

    /// The hint of the user unit on a cgroup path.
    private static func desktopHint(on components: [ArraySlice<UInt8>]) -> String? {
        guard let manager = components.firstIndex(where: isUserManager),
            let unit = components[(manager + 1)...].first(where: { !$0.hasSuffix(".slice") }),
            unit.starts(with: "app-".utf8)
        else { return nil }
        var body = unit.dropFirst(4)
        if body.hasSuffix(".scope") {
            body = body.dropLast(6)
            guard let dash = body.lastIndex(of: UInt8(ascii: "-")), body.index(after: dash) < body.endIndex,
                body[body.index(after: dash)...].allSatisfy(NameBytes.isAlphanumeric)
            else { return nil }
            body = body[..<dash]
        } else if body.hasSuffix(".service") {
            body = body.dropLast(8)
            if let at = body.firstIndex(of: UInt8(ascii: "@")) {
                body = body[..<at]
            } else if body.hasSuffix("-autostart") {
                body = body.dropLast(10)
            }
        } else {
            return nil
        }
        if let dash = body.firstIndex(of: UInt8(ascii: "-")), dash > body.startIndex,
            body[..<dash].allSatisfy(NameBytes.isAlphanumeric)
        {
            body = body[body.index(after: dash)...]
        }
        guard let id = UnitNameEscaping.unescape(body), isDesktopFileID(id) else { return nil }
        return String(decoding: id, as: UTF8.self)
    }

    /// True for `user@<uid>.service`.
    private static func isUserManager(_ component: ArraySlice<UInt8>) -> Bool {
        guard component.starts(with: "user@".utf8), component.hasSuffix(".service") else { return false }
        let uid = component.dropFirst(5).dropLast(8)
        return !uid.isEmpty && uid.allSatisfy(NameBytes.isDigit)
    }

    /// True for a desktop file id as a hint gives it.
    private static func isDesktopFileID(_ id: [UInt8]) -> Bool {
        guard let first = id.first, id.count <= maximumApplicationIDLength,
            NameBytes.isAlphanumeric(first) || first == UInt8(ascii: "_")
        else { return false }
        return id.allSatisfy { NameBytes.isAlphanumeric($0) || ".-_".utf8.contains($0) }
    }
}

extension ArraySlice<UInt8> {
    /// True when the slice ends with the bytes of `suffix`.
    fileprivate func hasSuffix(_ suffix: String) -> Bool {
        count >= suffix.utf8.count && self.suffix(suffix.utf8.count).elementsEqual(suffix.utf8)
    }
}
