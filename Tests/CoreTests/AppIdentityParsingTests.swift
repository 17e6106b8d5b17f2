import Testing
import WhereaboutsCore

/// The user manager's app slice of uid 1000, as paths below it start.
private let apps = "/user.slice/user-1000.slice/user@1000.service/app.slice"

/// The v1 controllers' lines of a hybrid system, `name=systemd` among them at `systemdLine` (0-based), each
/// controller on a path of its own as systemd leaves them.
private func hybrid(systemd path: String, at systemdLine: Int, unified: String? = nil) -> String {
    var lines = [
        "12:cpuset:/", "11:memory:/user.slice/user-1000.slice/user@1000.service", "10:devices:/user.slice",
        "9:freezer:/", "8:net_cls,net_prio:/", "7:pids:/user.slice/user-1000.slice/user@1000.service",
        "6:blkio:/user.slice", "5:cpu,cpuacct:/user.slice", "4:perf_event:/", "3:hugetlb:/", "2:rdma:/",
    ]
    lines.insert("1:name=systemd:\(path)", at: systemdLine)
    if let unified { lines.append("0::\(unified)") }
    return lines.joined(separator: "\n") + "\n"
}

/// What `flatpakApp` makes of `text`: the app, or the error.
private func flatpak(_ text: String) -> Result<String?, AppIdentityError> {
    Result { () throws(AppIdentityError) in try AppIdentityParsing.flatpakApp(cgroup: text) }
}

/// What `snapApp` makes of the bytes of `label`, and of `extra` after them.
private func snap(_ label: String, _ extra: [UInt8] = []) -> Result<String?, AppIdentityError> {
    Result { () throws(AppIdentityError) in try AppIdentityParsing.snapApp(securityLabel: Array(label.utf8) + extra) }
}

@Suite("App identity parsing")
struct AppIdentityParsingTests {
    // MARK: Flatpak

    @Test func cgroupV2Only() {
        let maps = "0::\(apps)/app-flatpak-org.gnome.Maps-12345.scope\n"
        #expect(flatpak(maps) == .success("org.gnome.Maps"))
        #expect(flatpak("0::\(apps)/app-flatpak-org.gnome.Maps-12345.scope") == .success("org.gnome.Maps"))
        #expect(flatpak("0::\(apps)/app-gnome-org.gnome.Maps-4242.scope\n") == .success(nil))
        #expect(flatpak("0::/system.slice/cron.service\n") == .success(nil))
        #expect(flatpak("0::/init.scope\n") == .success(nil))
    }

    @Test func hybridWithTheSystemdLineAnywhere() {
        let scope = "\(apps)/app-flatpak-org.gnome.Maps-12345.scope"
        for line in [0, 1, 5, 11] {
            #expect(flatpak(hybrid(systemd: scope, at: line)) == .success("org.gnome.Maps"), "line \(line)")
            #expect(
                flatpak(hybrid(systemd: scope, at: line, unified: scope)) == .success("org.gnome.Maps"), "line \(line)")
        }
        #expect(flatpak(hybrid(systemd: "\(apps)/app-gnome-firefox-7.scope", at: 3, unified: "/")) == .success(nil))
    }

    @Test func aHierarchyAtItsRootIsNotAPlacement() {
        let scope = "\(apps)/app-flatpak-org.gnome.Maps-12345.scope"
        // Legacy systemd with cgroup2 mounted by something else; a v2 system with a named hierarchy for containers.
        #expect(flatpak(hybrid(systemd: scope, at: 2, unified: "/")) == .success("org.gnome.Maps"))
        #expect(flatpak("1:name=systemd:/\n0::\(scope)\n") == .success("org.gnome.Maps"))
    }

    @Test func hierarchiesThatDisagreeAreRefused() {
        let maps = "\(apps)/app-flatpak-org.gnome.Maps-12345.scope"
        let weather = "\(apps)/app-flatpak-org.gnome.Weather-777.scope"
        #expect(
            flatpak(hybrid(systemd: maps, at: 4, unified: weather))
                == .failure(
                    AppIdentityError(
                        .hierarchiesDisagree(
                            first: "name=systemd", firstApp: "org.gnome.Maps", second: "unified",
                            secondApp: "org.gnome.Weather"))))
        let outside = AppIdentityError(
            .hierarchiesDisagree(first: "name=systemd", firstApp: nil, second: "unified", secondApp: "org.gnome.Maps"))
        #expect(flatpak(hybrid(systemd: "\(apps)/app-gnome-foo-1.scope", at: 0, unified: maps)) == .failure(outside))
        #expect(
            outside.description
                == "the cgroup hierarchies disagree: name=systemd puts the process in no Flatpak app, unified in "
                + "Flatpak app 'org.gnome.Maps'")
    }

    @Test func aScopeWithAnInvalidIDIsRefused() {
        let cases: [(id: String, scope: String)] = [
            ("org.gnome", "app-flatpak-org.gnome-1.scope"),
            ("org.gnome-maps.Maps", "app-flatpak-org.gnome\\x2dmaps.Maps-1.scope"),
            ("org.2gnome.Maps", "app-flatpak-org.2gnome.Maps-1.scope"),
            ("org..Maps", "app-flatpak-org..Maps-1.scope"),
            ("org.gnome.Maps.", "app-flatpak-org.gnome.Maps.-1.scope"),
            ("org.gnome.M aps", "app-flatpak-org.gnome.M\\x20aps-1.scope"),
            ("org.gnome.Maps\u{0}", "app-flatpak-org.gnome.Maps\\x00-1.scope"),
            ("org.gnome.Mäps", "app-flatpak-org.gnome.M\\xc3\\xa4ps-1.scope"),
        ]
        for (id, scope) in cases {
            #expect(flatpak("0::\(apps)/\(scope)\n") == .failure(AppIdentityError(.invalidFlatpakID(id, scope: scope))))
        }
        #expect(
            AppIdentityError(.invalidFlatpakID("org.gnome", scope: "app-flatpak-org.gnome-1.scope")).description
                == "the Flatpak scope 'app-flatpak-org.gnome-1.scope' names 'org.gnome', which is not a valid "
                + "application id")
        for scope in [
            "app-flatpak-org.gnome.Maps.scope", "app-flatpak-org.gnome.Maps-.scope",
            "app-flatpak-org.gnome.Maps-12a.scope",
            "app-flatpak--12.scope", "app-flatpak-org.gnome.\\x2Maps-1.scope", "app-flatpak-org.gnome.Maps\\-1.scope",
        ] {
            #expect(
                flatpak("0::\(apps)/\(scope)\n") == .failure(AppIdentityError(.malformedFlatpakScope(scope: scope))))
        }
    }

    @Test func escapedDashesAndOlderScopeNames() {
        #expect(
            flatpak("0::\(apps)/app-flatpak-com.github.tchx84.Flatseal\\x2dbeta-9.scope\n")
                == .success("com.github.tchx84.Flatseal-beta"))
        // Releases before the escaping wrote the last element's `-` as it is; the id runs to the last `-`.
        #expect(flatpak("0::\(apps)/app-flatpak-org.example.my-app-9.scope\n") == .success("org.example.my-app"))
        #expect(flatpak("1:name=systemd:\(apps)/flatpak-org.gnome.Maps-31.scope\n") == .success("org.gnome.Maps"))
    }

    @Test func scopesUnderAppSliceNestedOrNot() {
        // A cgroup below the app's scope is still the app's.
        #expect(flatpak("0::\(apps)/app-flatpak-org.gnome.Maps-12345.scope/worker\n") == .success("org.gnome.Maps"))
        #expect(
            flatpak("0::\(apps)/app-gnome-org.gnome.Maps.slice/app-flatpak-org.gnome.Maps-12345.scope\n")
                == .success("org.gnome.Maps"))
        #expect(
            flatpak("0::\(apps)/app-flatpak-org.gnome.Maps-1.scope/app-flatpak-org.gnome.Maps-2.scope\n")
                == .success("org.gnome.Maps"))
        #expect(
            flatpak("0::\(apps)/app-flatpak-org.gnome.Maps-1.scope/app-flatpak-org.evil.Spy-2.scope\n")
                == .failure(
                    AppIdentityError(
                        .nestedFlatpakScopes(
                            outer: "app-flatpak-org.gnome.Maps-1.scope", inner: "app-flatpak-org.evil.Spy-2.scope"))))
        // A terminal's tab under the app slice of GNOME Terminal is no Flatpak.
        #expect(flatpak("0::\(apps)/app-org.gnome.Terminal.slice/vte-spawn-0a1b2c3d.scope\n") == .success(nil))
    }

    @Test func thePortalAndFlatpaksOwnServicesAreNoFlatpakApp() {
        let session = "/user.slice/user-1000.slice/user@1000.service/session.slice"
        for unit in [
            "xdg-desktop-portal.service", "xdg-desktop-portal-gnome.service", "flatpak-session-helper.service",
            "flatpak-portal.service", "dbus-broker.service",
        ] {
            #expect(flatpak("0::\(session)/\(unit)\n") == .success(nil), "\(unit)")
            #expect(AppIdentityParsing.desktopHint(cgroup: "0::\(session)/\(unit)\n") == nil, "\(unit)")
        }
    }

    @Test func emptyMalformedAndStrangeTexts() {
        for text in [
            "", "\n", "\n\n\n", "0::", "0::/", "garbage", "0:/\(apps)/app-flatpak-org.gnome.Maps-1.scope",
            "0::relative/app-flatpak-org.gnome.Maps-1.scope", "3:cpu:\(apps)/app-flatpak-org.gnome.Maps-1.scope",
            "0:cpu:\(apps)/app-flatpak-org.gnome.Maps-1.scope",
        ] {
            #expect(flatpak(text) == .success(nil), "\(text)")
            #expect(AppIdentityParsing.desktopHint(cgroup: text) == nil, "\(text)")
        }
        // Bytes that are not UTF-8 decode to U+FFFD, which no id has.
        let bytes = Array("0::\(apps)/app-flatpak-org.gnome.M".utf8) + [0xff, 0xc3] + Array("aps-1.scope\n".utf8)
        #expect(throws: AppIdentityError.self) {
            try AppIdentityParsing.flatpakApp(cgroup: String(decoding: bytes, as: UTF8.self))
        }
        #expect(flatpak("0::\(apps)/app-gnome-\u{FFFD}-1.scope\n") == .success(nil))
        // A combining mark after a separator does not join it to the next name.
        #expect(flatpak("0::\(apps)/\u{301}/app-flatpak-org.gnome.Maps-1.scope\n") == .success("org.gnome.Maps"))
    }

    @Test func veryLongTexts() {
        let deep = "0::" + String(repeating: "/a.slice", count: 50_000) + "/app-flatpak-org.gnome.Maps-1.scope\n"
        #expect(flatpak(deep) == .success("org.gnome.Maps"))
        let id = "org.gnome." + String(repeating: "M", count: 300)
        #expect(
            flatpak("0::\(apps)/app-flatpak-\(id)-1.scope")
                == .failure(AppIdentityError(.invalidFlatpakID(id, scope: "app-flatpak-\(id)-1.scope"))))
        let many = String(repeating: "5:cpu,cpuacct:/user.slice\n", count: 20_000) + "0::/\n"
        #expect(flatpak(many) == .success(nil))
        let error = AppIdentityError(.invalidFlatpakID(id, scope: "app-flatpak-\(id)-1.scope"))
        #expect(error.description.count < 250)
    }

    // MARK: Application ids

    @Test func applicationIDsAsFlatpakDefinesThem() {
        for id in [
            "org.gnome.Maps", "com.github.tchx84.Flatseal", "org.example.my-app", "org.example.-x", "_a._b._c",
            "a.b.c", "org.example.App_2", "io.github.a0.b1.c2.d3", "org.x." + String(repeating: "y", count: 249),
        ] {
            #expect(AppIdentityParsing.isValidApplicationID(id), "\(id)")
        }
        for id in [
            "", "org.gnome", "org", "org.gnome-shell.Maps", "-org.gnome.Maps", ".org.gnome.Maps", "org.gnome.Maps.",
            "org..Maps", "org.gnome.3Maps", "1org.gnome.Maps", "org.gnome.Ma ps", "org.gnome.Mäps", "org.gnome.Maps\n",
            "org/gnome/Maps", "org.gnome.Maps\u{0}", "org.x." + String(repeating: "y", count: 250),
        ] {
            #expect(!AppIdentityParsing.isValidApplicationID(id), "\(id)")
        }
    }

    // MARK: Desktop hints

    @Test func systemdUserUnitHints() {
        let hints: [(unit: String, hint: String?)] = [
            ("app-gnome-org.gnome.Epiphany-182352.scope", "org.gnome.Epiphany"),
            ("app-gnome-org.gnome.Evolution\\x2dalarm\\x2dnotify-2437.scope", "org.gnome.Evolution-alarm-notify"),
            ("app-gnome-firefox\\x2desr-5123.scope", "firefox-esr"),
            ("app-org.gnome.Evince-12345.scope", "org.gnome.Evince"),
            ("app-com.obsproject.Studio-d70acc38b5154a3a8b4a60accc4b15f4.scope", "com.obsproject.Studio"),
            ("app-KDE-org.kde.okular@12345.service", "org.kde.okular"),
            ("app-gnome-org.gnome.Evince@12345.service", "org.gnome.Evince"),
            ("app-org.kde.amarok.service", "org.kde.amarok"),
            (
                "app-org.gnome.SettingsDaemon.DiskUtilityNotify-autostart.service",
                "org.gnome.SettingsDaemon.DiskUtilityNotify"
            ),
            ("app-org.gnome.Software@autostart.service", "org.gnome.Software"),
            ("app-flatpak-org.gnome.Maps-12345.scope", "org.gnome.Maps"),
            ("app-glib-spice\\x2dvdagent-1839.scope", "spice-vdagent"),
            ("app-not-a-well-formed-unit-name", nil),
            ("app-gnome--1.scope", nil),
            ("app-gnome-org.gnome.Maps.scope", nil),
            ("app-gnome-org.gnome.Maps-.scope", nil),
            ("app-gnome-org.gnome.M\\x2aps-1.scope", nil),
            ("app-gnome-org.gnome.M\\xzz-1.scope", nil),
            ("app-gnome-.hidden-1.scope", nil),
            ("gnome-terminal-server.service", nil),
            ("vte-spawn-0a1b2c3d-aaaa-bbbb-cccc-0123456789ab.scope", nil),
            ("snap.firefox.firefox-6f3b9e46-0b1c-4c8d-a2f3-8a1b2c3d4e5f.scope", nil),
            ("init.scope", nil),
        ]
        for (unit, hint) in hints {
            #expect(AppIdentityParsing.desktopHint(cgroup: "0::\(apps)/\(unit)\n") == hint, "\(unit)")
        }
    }

    @Test func theHintIsTheUserUnitsAlone() {
        let user = "/user.slice/user-1000.slice/user@1000.service"
        // Slices are passed over; the first unit below them decides.
        #expect(
            AppIdentityParsing.desktopHint(cgroup: "0::\(apps)/app-gnome-org.gnome.Maps-1.scope/sub\n")
                == "org.gnome.Maps")
        #expect(
            AppIdentityParsing.desktopHint(
                cgroup: "0::\(apps)/app-gnome-org.gnome.Terminal-92502.slice/vte-spawn-1a2b.scope\n") == nil)
        #expect(
            AppIdentityParsing.desktopHint(cgroup: "0::\(user)/app-gnome-org.gnome.Maps-1.scope\n") == "org.gnome.Maps")
        // Outside the user manager: a login session's scope, a system service.
        #expect(
            AppIdentityParsing.desktopHint(cgroup: "0::/user.slice/user-1000.slice/app-gnome-org.gnome.Maps-1.scope\n")
                == nil)
        #expect(AppIdentityParsing.desktopHint(cgroup: "0::/system.slice/app-foo-org.x.Y-1.scope\n") == nil)
        #expect(AppIdentityParsing.desktopHint(cgroup: "0::/user.slice/user@.service/app-org.x.Y-1.scope\n") == nil)
        // Hybrid: from either line when the other is at its root; none when they disagree.
        let maps = "\(apps)/app-gnome-org.gnome.Maps-1.scope"
        #expect(AppIdentityParsing.desktopHint(cgroup: hybrid(systemd: maps, at: 6)) == "org.gnome.Maps")
        #expect(AppIdentityParsing.desktopHint(cgroup: hybrid(systemd: maps, at: 6, unified: maps)) == "org.gnome.Maps")
        #expect(
            AppIdentityParsing.desktopHint(
                cgroup: hybrid(systemd: maps, at: 6, unified: "\(apps)/app-gnome-org.gnome.Weather-1.scope")) == nil)
    }

    // MARK: Snap

    @Test func snapAppLabels() {
        #expect(snap("snap.firefox.firefox (enforce)") == .success("firefox.firefox"))
        #expect(snap("snap.firefox.geckodriver (enforce)") == .success("firefox.geckodriver"))
        #expect(snap("snap.foo.bar (complain)") == .success("foo.bar"))
        #expect(snap("snap.foo.bar (kill)") == .success("foo.bar"))
        #expect(snap("snap.foo.bar") == .success("foo.bar"))
        #expect(snap("snap.foo_beta.bar (enforce)") == .success("foo_beta.bar"))
        #expect(
            snap("snap.gnome-calculator.gnome-calculator (enforce)") == .success("gnome-calculator.gnome-calculator"))
        #expect(snap("snap.0ad.0AD-2 (enforce)") == .success("0ad.0AD-2"))
        // An app may be called "hook".
        #expect(snap("snap.foo.hook (enforce)") == .success("foo.hook"))
        #expect(AppIdentity.snap("firefox.firefox").description == "snap:firefox.firefox")
    }

    @Test func labelsThatAreNoSnapsAreNil() {
        for label in [
            "", "unconfined", "/usr/bin/evince (enforce)", "snap-update-ns.foo (enforce)", "snap-confine (enforce)",
            "/snap/core22/1234/usr/lib/snapd/snap-confine (enforce)", "lsb_release (complain)", "snap (enforce)",
            "snapfoo.bar.baz (enforce)", "libreoffice-soffice (enforce)",
        ] {
            #expect(snap(label) == .success(nil), "\(label)")
            #expect(snap(label, [0]) == .success(nil), "\(label)")
        }
        #expect(snap("/home/\u{e9}t\u{e9}/a.out (enforce)") == .success(nil))
        #expect(
            Result { () throws(AppIdentityError) in
                try AppIdentityParsing.snapApp(securityLabel: [0x2f, 0xff, 0xfe, 0x80])
            }
                == .success(nil))
    }

    @Test func hooksAreConfinedButNoApps() {
        for label in [
            "snap.foo.hook.configure (enforce)", "snap.foo_bar.hook.install (enforce)",
            "snap.foo.hook.prepare-device (complain)", "snap.foo+comp.hook.install (enforce)",
        ] {
            #expect(snap(label) == .failure(AppIdentityError(.snapHook(label: label))), "\(label)")
        }
        #expect(
            AppIdentityError(.snapHook(label: "snap.foo.hook.configure (enforce)")).description
                == "the security label 'snap.foo.hook.configure (enforce)' is a snap's hook, not an app")
    }

    @Test func labelsInSnapdsNamespaceThatAreNoAppsAreRefused() {
        for label in [
            "snap.", "snap.foo", "snap.foo.", "snap..bar", "snap.foo.bar.baz", "snap.f.bar", "snap.Foo.bar",
            "snap.foo-.bar", "snap.-foo.bar", "snap.fo--o.bar", "snap.123.bar", "snap.foo_.bar", "snap.foo_ABC.bar",
            "snap.foo_12345678901.bar", "snap.foo.-bar", "snap.foo.bar-", "snap.foo.ba--r", "snap.foo.b_r",
            "snap.foo.bar (Enforce)", "snap.foo.bar ()", "snap.foo.bar(enforce)", "snap.foo.bar (enforce",
            "snap.foo.bar )",
            "snap.foo.bar  (enforce)", "snap.foo.bar//&:ns:unconfined (mixed)", "snap.foo.bar//hat (enforce)",
            "snap.foo+comp.bar (enforce)", "snap.foo.hook.Configure (enforce)", "snap.foo.hook.1st (enforce)",
            "snap.foo+.hook.install (enforce)", "snap.foo.workload.w (enforce)", "snap.a\u{e9}.bar (enforce)",
            "snap." + String(repeating: "a", count: 41) + ".bar (enforce)",
        ] {
            #expect(snap(label) == .failure(AppIdentityError(.invalidSnapLabel(label))), "\(label)")
        }
        // Bytes that are not UTF-8, shown with U+FFFD.
        #expect(
            Result { () throws(AppIdentityError) in
                try AppIdentityParsing.snapApp(securityLabel: Array("snap.foo.b".utf8) + [0xff] + Array("r".utf8))
            } == .failure(AppIdentityError(.invalidSnapLabel("snap.foo.b\u{FFFD}r"))))
    }

    @Test func nulBytesEndALabelOnly() {
        #expect(snap("snap.firefox.firefox (enforce)", [0]) == .success("firefox.firefox"))
        #expect(snap("snap.firefox.firefox (enforce)", [0, 0]) == .success("firefox.firefox"))
        #expect(snap("", [0]) == .success(nil))
        #expect(snap("snap.firefox.firefox", [0] + Array(" (enforce)".utf8)) == .failure(AppIdentityError(.nulInLabel)))
        #expect(snap("unconfined", [0, 0x41]) == .failure(AppIdentityError(.nulInLabel)))
    }

    @Test func veryLongLabels() {
        let long = "snap.foo." + String(repeating: "a", count: 100_000) + " (enforce)"
        #expect(snap(long) == .success("foo." + String(repeating: "a", count: 100_000)))
        let tooMany = String(repeating: "snap.", count: 20_000)
        #expect(snap(tooMany) == .failure(AppIdentityError(.invalidSnapLabel(tooMany))))
        #expect(AppIdentityError(.invalidSnapLabel(tooMany)).description.count < 250)
    }

    // MARK: Identity

    @Test func identitiesDescribeThemselves() {
        #expect(AppIdentity.flatpak("org.gnome.Maps").description == "flatpak:org.gnome.Maps")
        #expect(AppIdentity.snap("foo_beta.bar").description == "snap:foo_beta.bar")
        #expect(AppIdentity.unconfined.description == "unconfined")
        #expect(AppIdentity.flatpak("org.gnome.Maps") != .snap("org.gnome.Maps"))
    }
}
