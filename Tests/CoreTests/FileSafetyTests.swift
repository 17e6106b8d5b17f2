import Testing
import WhereaboutsCore

/// The configuration parser refusing what C would cut or misread, and saying where; a key given twice is a warning
/// naming both lines.
@Suite("Configuration text that cannot be trusted")
struct ConfigurationTextSafetyTests {
    @Test func aKeyGivenTwiceInOneGroupIsReportedWithBothLines() throws {
        let text = "[authorisation]\npolkit=false\n\n[agent]\nwhitelist=gnome-shell\n\n[authorisation]\npolkit=true\n"
        let configuration = try Configuration.parse(text, file: "whereabouts.conf")
        #expect(configuration.authorisation.usesPolkit, "the last value holds, as in GLib")
        let duplicate = try #require(configuration.duplicateKeys.first)
        #expect(configuration.duplicateKeys.count == 1)
        #expect(duplicate.key == "polkit" && duplicate.group == "authorisation")
        #expect(duplicate.earlierLine == 2 && duplicate.line == 8)
        #expect(
            duplicate.description.hasPrefix("whereabouts.conf:8: key 'polkit' in [authorisation]: "), "\(duplicate)")
        #expect(duplicate.description.contains("line 2"), "\(duplicate)")
    }

    @Test func aKeyRepeatedInAnotherGroupIsNoDuplicate() throws {
        let keyFile = try KeyFile(parsing: "[wifi]\nenable=true\n[ip]\nenable=true\n", file: "t.conf")
        #expect(keyFile.duplicateKeys.isEmpty)
    }

    @Test(arguments: [
        ("[static-source]\nenable=true\npath=/etc/geo\u{0}location\n", 3),
        ("[agent]\nwhitelist=gnome-shell\u{0};evil\n", 2),
        ("# a comment\u{0}\n[wifi]\nenable=true\n", 1),
        ("[wi\u{0}fi]\nenable=true\n", 1),
    ])
    func aNULCharacterIsRefusedAtItsLine(text: String, line: Int) {
        let error = #expect(throws: ConfigurationError.self) { try Configuration.parse(text, file: "whereabouts.conf") }
        #expect(error?.line == line && error?.problem == .syntax(.nulCharacter), "\(String(describing: error))")
        #expect(error?.description.hasPrefix("whereabouts.conf:\(line): ") == true)
    }

    @Test func invalidUTF8IsRefusedAtItsLine() {
        let bytes = Array("[wifi]\nenable=true\n".utf8) + [0x23, 0x20, 0xC3, 0x28, 0x0A] + Array("[ip]\n".utf8)
        let error = #expect(throws: ConfigurationError.self) {
            try Configuration.parse(bytes, file: "whereabouts.conf")
        }
        #expect(error?.description == "whereabouts.conf:3: the line is not valid UTF-8")
    }

    @Test func validUTF8BytesParseAsTheirText() throws {
        let text = "[agent]\nwhitelist=gnome-shell;\u{E9}t\u{E9}\n"
        #expect(try Configuration.parse(Array(text.utf8), file: "c") == Configuration.parse(text, file: "c"))
    }
}

/// The grant store bounded per user and in all, so that the writer never writes what the reader refuses.
@Suite("Grant store limits")
struct GrantStoreLimitTests {
    static let victim: UInt32 = 1000
    static let attacker: UInt32 = 65534

    @Test func aUserCannotDecideAboutMoreThanTheirShare() {
        var store = GrantStore()
        store.set(.granted(.always, approximate: false), uid: Self.victim, app: "org.example.Maps")
        for index in 0..<GrantStore.maximumDecisionsPerUser {
            #expect(store.set(.denied, uid: Self.attacker, app: "app-\(index)") == nil)
        }
        let refusal = store.set(.denied, uid: Self.attacker, app: "one-more")
        #expect(refusal == .user(uid: Self.attacker, decisions: GrantStore.maximumDecisionsPerUser))
        #expect(store.decision(uid: Self.attacker, app: "one-more") == nil)
        #expect(refusal?.description.contains("\(GrantStore.maximumDecisionsPerUser)") == true)
        // Changing or forgetting a decision already stored is no new one; another user is unaffected.
        #expect(store.set(.granted(.whenInUse, approximate: true), uid: Self.attacker, app: "app-0") == nil)
        #expect(store.set(nil, uid: Self.attacker, app: "app-1") == nil)
        #expect(store.set(.denied, uid: Self.attacker, app: "one-more") == nil)
        #expect(
            store.set(.granted(.whenInUse, approximate: false), uid: Self.victim, app: "org.example.Weather") == nil)
        #expect(store.decision(uid: Self.victim, app: "org.example.Maps") == .granted(.always, approximate: false))
    }

    @Test func theStoreAsAWholeIsBounded() {
        var store = GrantStore()
        var uid: UInt32 = 0
        while store.decisions.count < GrantStore.maximumDecisions {
            for index
                in 0..<min(GrantStore.maximumDecisionsPerUser, GrantStore.maximumDecisions - store.decisions.count)
            {
                store.set(.denied, uid: uid, app: "a\(index)")
            }
            uid += 1
        }
        #expect(store.set(.denied, uid: uid, app: "a0") == .store(decisions: GrantStore.maximumDecisions))
    }

    @Test func theLongestStoreFitsTheReadersLimit() {
        // The longest line: the longest user id, a 255-byte desktop id, "when-in-use" and "approximate".
        let line = "\(UInt32.max)\t\(String(repeating: "x", count: 255))\twhen-in-use\tapproximate\n"
        #expect(
            GrantStore.header.utf8.count + 1 + GrantStore.maximumDecisions * line.utf8.count
                <= GrantStore.maximumTextSize)
    }

    @Test func textSizeIsTheTextsLength() throws {
        var store = GrantStore()
        store.set(.granted(.always, approximate: false), uid: 1, app: "org.example.Maps")
        store.set(.granted(.whenInUse, approximate: true), uid: 42, app: "org.example.\u{E9}t\u{E9}")
        store.set(.denied, uid: 4_000_000_000, app: "x")
        store.set(.denied, uid: 1, app: "org.example.Maps")
        store.set(nil, uid: 42, app: "org.example.\u{E9}t\u{E9}")
        #expect(store.textSize == store.text.utf8.count)
        #expect(try GrantStore.parse(store.text, file: "grants").textSize == store.textSize)
    }

    @Test func anOlderFullerFileIsReadButCannotGrowPastTheLimit() throws {
        // Written before the limits: one user with far more than their share, the file within a line of the limit.
        let app = String(repeating: "f", count: 240)
        var text = GrantStore.header + "\n\(Self.victim)\torg.example.Maps\talways\tprecise\n"
        var index = 0
        while text.utf8.count + 300 < GrantStore.maximumTextSize {
            text += "\(Self.attacker)\t\(app)-\(index)\tdenied\t-\n"
            index += 1
        }
        var store = try GrantStore.parse(text, file: "grants")
        #expect(store.decisions.count == index + 1)
        #expect(store.set(.denied, uid: Self.attacker, app: "new") == .user(uid: Self.attacker, decisions: index))
        #expect(store.set(.denied, uid: 7, app: "new") == .store(decisions: index + 1))
        // Changing a stored decision to a longer line may not pass the limit either.
        var grown = 0
        for changed in 0..<index {
            if store.set(.granted(.whenInUse, approximate: true), uid: Self.attacker, app: "\(app)-\(changed)") == nil {
                grown += 1
            }
            #expect(store.textSize <= GrantStore.maximumTextSize)
        }
        #expect(grown < index)
        #expect(store.text.utf8.count <= GrantStore.maximumTextSize)
        #expect(store.decision(uid: Self.victim, app: "org.example.Maps") == .granted(.always, approximate: false))
    }

    @Test(arguments: [
        "", "tab\there", "line\nend", "carriage\rreturn", "nel\u{85}", "sep\u{2028}", "bell\u{7}",
        String(repeating: "x", count: 256),
    ])
    func aDesktopIdTheFileCannotHoldIsRefused(app: String) throws {
        var store = GrantStore()
        store.set(.granted(.always, approximate: false), uid: Self.victim, app: "org.example.Maps")
        #expect(store.set(.denied, uid: Self.attacker, app: app) == .unstorableApp)
        #expect(try GrantStore.parse(store.text, file: "grants") == store)
    }
}
