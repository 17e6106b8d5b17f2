import Testing
import WhereaboutsCore

/// The user manager of uid 1000, as paths below it start.
private let manager = "/user.slice/user-1000.slice/user@1000.service"

/// The identity `caller` reads from `cgroup` and `label` for uid 1000, or its error.
private func caller(_ cgroup: String, label: String = "", uid: UInt32 = 1000) -> Result<
    CallerIdentity, AppIdentityError
> {
    Result { () throws(AppIdentityError) in
        try AppIdentityParsing.caller(cgroup: cgroup, securityLabel: Array(label.utf8), uid: uid)
    }
}

@Suite("Who a client is served as")
struct ClientAppTests {
    // MARK: The desktop portal

    @Test func thePortalIsItsUsersUnitInEitherSliceAndBothHierarchies() {
        let portal = "\(manager)/app.slice/xdg-desktop-portal.service"
        #expect(AppIdentityParsing.isDesktopPortal(cgroup: "0::\(portal)\n", uid: 1000))
        #expect(
            AppIdentityParsing.isDesktopPortal(
                cgroup: "0::\(manager)/session.slice/xdg-desktop-portal.service\n", uid: 1000))
        #expect(
            AppIdentityParsing.isDesktopPortal(
                cgroup: "12:cpuset:/\n1:name=systemd:\(portal)\n0::\(portal)\n", uid: 1000))
    }

    @Test func nothingElsePassesForThePortal() {
        let portal = "\(manager)/app.slice/xdg-desktop-portal.service"
        // Another user's portal: the caller's user manager is not the portal's.
        #expect(!AppIdentityParsing.isDesktopPortal(cgroup: "0::\(portal)\n", uid: 1001))
        // A cgroup below the unit, a unit of another name, the system's own unit of that name.
        #expect(!AppIdentityParsing.isDesktopPortal(cgroup: "0::\(portal)/sub\n", uid: 1000))
        #expect(
            !AppIdentityParsing.isDesktopPortal(
                cgroup: "0::\(manager)/app.slice/xdg-desktop-portal-gtk.service\n", uid: 1000))
        #expect(
            !AppIdentityParsing.isDesktopPortal(cgroup: "0::/system.slice/xdg-desktop-portal.service\n", uid: 1000))
        // A Flatpak app's scope, and hierarchies that disagree.
        #expect(
            !AppIdentityParsing.isDesktopPortal(
                cgroup: "0::\(manager)/app.slice/app-flatpak-org.gnome.Maps-1.scope\n", uid: 1000))
        #expect(
            !AppIdentityParsing.isDesktopPortal(
                cgroup: "1:name=systemd:\(portal)\n0::\(manager)/app.slice/other.service\n", uid: 1000))
        #expect(!AppIdentityParsing.isDesktopPortal(cgroup: "", uid: 1000))
    }

    // MARK: The caller's identity

    @Test func aCallersSandboxIsItsFlatpakOrItsSnap() throws {
        let flatpak = try caller("0::\(manager)/app.slice/app-flatpak-org.gnome.Maps-42.scope\n").get()
        // The scope is named after the app as systemd names units after desktop files: a hint too.
        #expect(flatpak == CallerIdentity(sandbox: .flatpak("org.gnome.Maps"), desktopHint: "org.gnome.Maps"))
        let snap = try caller(
            "0::\(manager)/app.slice/snap.firefox.firefox-1.scope\n", label: "snap.firefox.firefox (enforce)"
        )
        .get()
        #expect(snap.sandbox == .snap("firefox.firefox"))
        let unconfined = try caller("0::\(manager)/app.slice/app-gnome-org.gnome.Maps-7.scope\n").get()
        #expect(unconfined == CallerIdentity(sandbox: .unconfined, desktopHint: "org.gnome.Maps"))
        let portal = try caller("0::\(manager)/app.slice/xdg-desktop-portal.service\n").get()
        #expect(portal.isDesktopPortal && portal.sandbox == .unconfined)
    }

    @Test func twoSandboxesAtOnceAndUnreadableOnesAreRefused() {
        let both = caller(
            "0::\(manager)/app.slice/app-flatpak-org.gnome.Maps-42.scope\n", label: "snap.firefox.firefox (enforce)")
        #expect(both == .failure(AppIdentityError(.twoSandboxes(flatpak: "org.gnome.Maps", snap: "firefox.firefox"))))
        #expect(
            caller("0::\(manager)/app.slice/app-flatpak-bad-1.scope\n")
                == .failure(AppIdentityError(.invalidFlatpakID("bad", scope: "app-flatpak-bad-1.scope"))))
        #expect(
            caller("0::/", label: "snap.firefox.hook.configure (enforce)")
                == .failure(AppIdentityError(.snapHook(label: "snap.firefox.hook.configure (enforce)"))))
    }

    @Test func aSnapsScopeNamesItsAppWhereNoLabelDoes() throws {
        let uuid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
        let scope = "0::\(manager)/app.slice/snap.firefox.firefox-\(uuid).scope\n"
        #expect(try caller(scope).get().sandbox == .snap("firefox.firefox"))
        #expect(try caller(scope, label: "snap.firefox.firefox (enforce)").get().sandbox == .snap("firefox.firefox"))
        // A name with a dash is escaped in the unit's name.
        let dashed = "0::\(manager)/app.slice/snap.test\\x2dsnapd.sh-\(uuid).scope\n"
        #expect(try caller(dashed).get().sandbox == .snap("test-snapd.sh"))
        #expect(
            caller(scope, label: "snap.chromium.chromium (enforce)")
                == .failure(
                    AppIdentityError(.snapLabelAndScopeDisagree(label: "chromium.chromium", scope: "firefox.firefox"))))
        // A hook's scope is confined but no app; a scope without its UUID is no snap's.
        #expect(throws: AppIdentityError.self) {
            try caller("0::\(manager)/app.slice/snap.firefox.hook.configure-\(uuid).scope\n").get()
        }
        #expect(try caller("0::\(manager)/app.slice/snap.firefox.firefox.scope\n").get().sandbox == .unconfined)
        #expect(
            caller("1:name=systemd:\(manager)/app.slice/snap.firefox.firefox-\(uuid).scope\n0::/\n")
                .map(\.sandbox) == .success(.snap("firefox.firefox")))
        #expect(
            caller(
                "1:name=systemd:\(manager)/app.slice/snap.firefox.firefox-\(uuid).scope\n0::\(manager)/app.slice/x.scope\n"
            ) == .failure(AppIdentityError(.snapScopesDisagree(first: "firefox.firefox", second: nil))))
    }

    // MARK: The app served

    @Test func aSandboxNamesTheAppWhateverDesktopIdSays() {
        let maps = CallerIdentity(sandbox: .flatpak("org.gnome.Maps"))
        #expect(ClientApp(caller: maps, desktopId: "firefox") == .flatpak("org.gnome.Maps"))
        #expect(ClientApp(caller: maps, desktopId: nil) == .flatpak("org.gnome.Maps"))
        let firefox = CallerIdentity(sandbox: .snap("firefox_beta.firefox"))
        #expect(ClientApp(caller: firefox, desktopId: "org.gnome.Maps") == .snap("firefox_beta_firefox"))
    }

    @Test func thePortalNamesTheAppItAsksFor() {
        let portal = CallerIdentity(sandbox: .unconfined, isDesktopPortal: true)
        #expect(ClientApp(caller: portal, desktopId: "org.gnome.Maps") == .portal("org.gnome.Maps"))
        // The portal asking for an app with no id asks with its own word only.
        #expect(ClientApp(caller: portal, desktopId: "") == .claimed(""))
    }

    @Test func onlyThePortalIsThePortal() {
        let portal = CallerIdentity(sandbox: .unconfined, isDesktopPortal: true)
        #expect(ClientApp(caller: portal, desktopId: ClientApp.desktopPortalID) == .portal("xdg-desktop-portal"))
        // The portal outside its unit (activated by a session bus that dbus-launch started), or any process of the
        // user, naming the portal's id: a claim, served as GeoClue serves it, and never verified.
        let plain = CallerIdentity(sandbox: .unconfined)
        #expect(ClientApp(caller: plain, desktopId: ClientApp.desktopPortalID) == .claimed("xdg-desktop-portal"))
        #expect(ClientApp(caller: plain, desktopId: ClientApp.desktopPortalID)?.isVerified == false)
        let sandboxed = CallerIdentity(sandbox: .flatpak("org.gnome.Maps"))
        #expect(ClientApp(caller: sandboxed, desktopId: ClientApp.desktopPortalID) == .flatpak("org.gnome.Maps"))
    }

    @Test func outsideASandboxTheDesktopIdIsAClaim() {
        let plain = CallerIdentity(sandbox: .unconfined, desktopHint: "org.gnome.Maps")
        #expect(ClientApp(caller: plain, desktopId: "firefox") == .claimed("firefox"))
        #expect(ClientApp(caller: plain, desktopId: nil) == nil)
    }

    @Test func onlyClaimsAreUnverifiedAndEachSaysWhatItIs() {
        let apps: [ClientApp] = [.flatpak("a.b.C"), .snap("s_a"), .portal("a.b.C"), .claimed("a.b.C")]
        #expect(apps.map(\.isVerified) == [true, true, true, false])
        #expect(apps.map(\.description) == ["flatpak:a.b.C", "snap:s_a", "portal:a.b.C", "claimed:a.b.C"])
        #expect(apps.map(\.id) == ["a.b.C", "s_a", "a.b.C", "a.b.C"])
    }

    // MARK: Grants follow identity

    @Test func aVerifiedDecisionServesOnlyVerifiedCallers() {
        var store = GrantStore()
        store.set(.granted(.always, approximate: false), uid: 1000, app: "org.gnome.Maps", verified: true)
        #expect(
            store.decision(uid: 1000, app: "org.gnome.Maps", verified: true) == .granted(.always, approximate: false))
        #expect(store.decision(uid: 1000, app: "org.gnome.Maps") == nil)
        #expect(store.decision(uid: 1001, app: "org.gnome.Maps", verified: true) == nil)
    }

    @Test func aClaimedDecisionServesAnyoneClaimingTheIdUntilAVerifiedOneIsMade() {
        var store = GrantStore()
        store.set(.granted(.whenInUse, approximate: true), uid: 1000, app: "org.gnome.Maps")
        #expect(store.decision(uid: 1000, app: "org.gnome.Maps") == .granted(.whenInUse, approximate: true))
        #expect(
            store.decision(uid: 1000, app: "org.gnome.Maps", verified: true) == .granted(.whenInUse, approximate: true))
        store.set(.denied, uid: 1000, app: "org.gnome.Maps", verified: true)
        #expect(store.decision(uid: 1000, app: "org.gnome.Maps", verified: true) == .denied)
        #expect(store.decision(uid: 1000, app: "org.gnome.Maps") == .granted(.whenInUse, approximate: true))
        #expect(store.keys(uid: 1000, app: "org.gnome.Maps").map(\.verified) == [false, true])
    }

    @Test func theFileKeepsWhoseDecisionItIsAndReadsVersionOne() throws {
        var store = GrantStore()
        store.set(.granted(.always, approximate: false), uid: 1000, app: "org.gnome.Maps", verified: true)
        store.set(.denied, uid: 1000, app: "org.gnome.Maps")
        #expect(
            store.text
                == "# whereabouts grants 2\n1000\torg.gnome.Maps\tdenied\t-\n"
                + "1000\torg.gnome.Maps\talways\tprecise\tverified\n")
        #expect(try GrantStore.parse(store.text, file: "grants") == store)
        #expect(store.textSize == store.text.utf8.count)
        let old = try GrantStore.parse(
            "# whereabouts grants 1\n1000\torg.gnome.Maps\talways\tprecise\n", file: "grants")
        #expect(
            old.decisions == [GrantStore.Key(uid: 1000, app: "org.gnome.Maps"): .granted(.always, approximate: false)])
    }

    @Test func aBadVerifiedFieldOrADuplicateIsCorrupt() {
        func error(_ text: String) -> String? {
            do {
                _ = try GrantStore.parse(text, file: "grants")
                return nil
            } catch {
                return error.description
            }
        }
        #expect(
            error("# whereabouts grants 2\n1000\ta.b.C\tdenied\t-\tmaybe\n") == "grants:2: 'maybe' is not 'verified'")
        #expect(
            error("# whereabouts grants 2\n1000\ta.b.C\tdenied\n")
                == "grants:2: expected 4 or 5 tab-separated fields, found 3")
        // Version 1 knew no verified decisions.
        #expect(
            error("# whereabouts grants 1\n1000\ta.b.C\tdenied\t-\tverified\n")
                == "grants:2: expected 4 tab-separated fields, found 5")
        #expect(
            error("# whereabouts grants 2\n1000\ta.b.C\tdenied\t-\tverified\n1000\ta.b.C\tdenied\t-\tverified\n")
                == "grants:3: a second verified decision of user 1000 about a.b.C")
        #expect(
            error("# whereabouts grants 2\n1000\ta.b.C\tdenied\t-\n1000\ta.b.C\tdenied\t-\n")
                == "grants:3: a second claimed decision of user 1000 about a.b.C")
        #expect(error("# whereabouts grants 2\n1000\ta.b.C\tdenied\t-\tverified\n1000\ta.b.C\tdenied\t-\n") == nil)
        #expect(error("# whereabouts grants 3\n") == "grants:1: the first line is not \"# whereabouts grants 2\"")
    }
}
