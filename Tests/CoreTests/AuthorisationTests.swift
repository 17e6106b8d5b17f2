import Testing
import WhereaboutsCore

@Suite("Authorisation rule")
struct AuthorisationRuleTests {
    typealias Row = (PolkitAnswer, PolkitAnswer, StoredDecision?, AppPermission, AuthorisationStatus)

    static let rows: [Row] = [
        // polkit's no always wins.
        (.no, .no, .granted(.always, approximate: false), .askAgent, .restricted),
        (.no, .no, nil, .allowed, .restricted),
        // The configuration refusing the app wins too.
        (.yes, .yes, nil, .disallowed, .restricted),
        // polkit's yes is yes.
        (.yes, .no, nil, .askAgent, .authorisedAlways),
        (.no, .yes, nil, .askAgent, .authorisedWhenInUse),
        (.challenge, .yes, nil, .askAgent, .authorisedWhenInUse),
        (.no, .yes, .denied, .askAgent, .authorisedWhenInUse),
        // A challenge is met by a stored grant.
        (.challenge, .challenge, .granted(.always, approximate: false), .askAgent, .authorisedAlways),
        (.challenge, .challenge, .granted(.whenInUse, approximate: true), .askAgent, .authorisedWhenInUse),
        (.no, .challenge, .granted(.always, approximate: false), .askAgent, .authorisedWhenInUse),
        (.challenge, .yes, .granted(.always, approximate: false), .askAgent, .authorisedAlways),
        // allowed=true counts as a stored always grant.
        (.challenge, .challenge, nil, .allowed, .authorisedAlways),
        // Otherwise: denied if refused, else not determined.
        (.challenge, .challenge, .denied, .askAgent, .denied),
        (.challenge, .challenge, nil, .askAgent, .notDetermined),
        (.challenge, .no, nil, .askAgent, .notDetermined),
    ]

    @Test(arguments: 0..<rows.count) func combinesPolkitStoreAndConfiguration(_ index: Int) {
        let (always, whenInUse, stored, configuration, expected) = Self.rows[index]
        #expect(
            AuthorisationRule.status(always: always, whenInUse: whenInUse, stored: stored, configuration: configuration)
                == expected)
    }

    @Test func whenInUseNeedsAnActiveSession() {
        #expect(AuthorisationRule.mayReceive(.authorisedAlways, sessionActive: nil))
        #expect(AuthorisationRule.mayReceive(.authorisedAlways, sessionActive: false))
        #expect(AuthorisationRule.mayReceive(.authorisedWhenInUse, sessionActive: true))
        #expect(!AuthorisationRule.mayReceive(.authorisedWhenInUse, sessionActive: false))
        #expect(!AuthorisationRule.mayReceive(.authorisedWhenInUse, sessionActive: nil))
        for status in [AuthorisationStatus.notDetermined, .restricted, .denied] {
            #expect(!AuthorisationRule.mayReceive(status, sessionActive: true))
        }
    }
}

@Suite("Grant store file")
struct GrantStoreTests {
    @Test func roundTrips() throws {
        var store = GrantStore()
        store.set(.granted(.always, approximate: false), uid: 1000, app: "org.example.Maps")
        store.set(.granted(.whenInUse, approximate: true), uid: 1000, app: "org.example.Weather")
        store.set(.denied, uid: 1001, app: "org.example.Tracker")
        let text = store.text
        #expect(text.hasPrefix(GrantStore.header + "\n"))
        #expect(try GrantStore.parse(text, file: "grants") == store)
        store.set(nil, uid: 1001, app: "org.example.Tracker")
        #expect(store.decision(uid: 1001, app: "org.example.Tracker") == nil)
        #expect(try GrantStore.parse(GrantStore.header + "\n", file: "grants") == GrantStore())
    }

    static let corrupt: [String] = [
        "",
        "# whereabouts grants 2\n",
        GrantStore.header + "\n1000\torg.example.Maps\talways\n",
        GrantStore.header + "\nroot\torg.example.Maps\talways\tprecise\n",
        GrantStore.header + "\n1000\t\talways\tprecise\n",
        GrantStore.header + "\n1000\torg.example.Maps\tsometimes\tprecise\n",
        GrantStore.header + "\n1000\torg.example.Maps\tdenied\tprecise\n",
        GrantStore.header + "\n1000\torg.example.Maps\talways\tprecise\n1000\torg.example.Maps\tdenied\t-\n",
        GrantStore.header + "\n\n",
        "\u{0}\u{1}binary",
    ]

    @Test(arguments: corrupt) func refusesCorruptFiles(_ text: String) {
        #expect(throws: GrantStoreError.self) { try GrantStore.parse(text, file: "grants") }
    }

    @Test func errorsNameFileAndLine() {
        do {
            _ = try GrantStore.parse(GrantStore.header + "\n1000\tx\tmaybe\tprecise\n", file: "/var/lib/whereabouts/grants")
            Issue.record("expected an error")
        } catch {
            #expect(error.description.hasPrefix("/var/lib/whereabouts/grants:2: "))
        }
    }
}
