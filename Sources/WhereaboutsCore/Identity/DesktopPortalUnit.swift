extension AppIdentityParsing {
    /// The systemd user unit that the desktop portal, `xdg-desktop-portal`, runs as.
    static let desktopPortalUnit = "xdg-desktop-portal.service"

    /// True when `text`, the content of a process's `/proc/PID/cgroup`, puts it in the desktop portal's own unit
    /// of user `uid`: `xdg-desktop-portal.service` directly below that user's manager (`user@<uid>.service`),
    /// slices between them aside, and not in a cgroup below the unit. On a hybrid system both systemd
    /// hierarchies must say so.
    ///
    /// What it proves: a sandboxed app can start no unit nor move itself into one, and another user cannot do
    /// either in `uid`'s manager, so neither can pass for the portal. A process of `uid` outside any sandbox can
    /// (it owns its manager's cgroups): one more way for it to claim an id, as it always can.
    public static func isDesktopPortal(cgroup text: String, uid: UInt32) -> Bool {
        isDesktopPortal(CgroupPlacement.placements(in: text), uid: uid)
    }

    /// ``isDesktopPortal(cgroup:uid:)`` of the placements read from a process's `/proc/PID/cgroup`.
    static func isDesktopPortal(_ placements: [CgroupPlacement], uid: UInt32) -> Bool {
        let manager = "user@\(uid).service"
        return !placements.isEmpty
            && placements.allSatisfy { placement in
                guard let index = placement.components.firstIndex(where: { $0.elementsEqual(manager.utf8) })
                else { return false }
                let below = placement.components[(index + 1)...].drop { $0.hasSuffix(".slice".utf8) }
                return below.count == 1 && below.first!.elementsEqual(desktopPortalUnit.utf8)
            }
    }
}

extension ArraySlice<UInt8> {
    /// True when the slice ends with `suffix`.
    fileprivate func hasSuffix(_ suffix: String.UTF8View) -> Bool {
        count >= suffix.count && self.suffix(suffix.count).elementsEqual(suffix)
    }
}
