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

    @Test func withoutPolkitTheConfigurationTheStoreAndTheAgentDecide() {
        func status(_ stored: StoredDecision?, _ configuration: AppPermission, agent: Bool) -> AuthorisationStatus {
            AuthorisationRule.statusWithoutPolkit(stored: stored, configuration: configuration, agentAsks: agent)
        }
        #expect(status(.granted(.always, approximate: false), .disallowed, agent: false) == .restricted)
        #expect(status(.denied, .allowed, agent: true) == .authorisedAlways)
        #expect(status(.granted(.whenInUse, approximate: true), .askAgent, agent: false) == .authorisedWhenInUse)
        #expect(status(.granted(.always, approximate: false), .askAgent, agent: true) == .authorisedAlways)
        #expect(status(.denied, .askAgent, agent: false) == .denied)
        #expect(status(nil, .askAgent, agent: true) == .notDetermined)
        #expect(status(nil, .askAgent, agent: false) == .authorisedAlways)
    }

    @Test func agentValuesMapToTheLevelNotAboveThem() {
        let expected: [UInt32: AccuracyLevel] = [
            0: .none, 1: .country, 2: .country, 3: .country, 4: .city, 5: .neighborhood, 6: .street, 7: .street,
            8: .exact, 9: .exact, .max: .exact,
        ]
        for (value, level) in expected { #expect(AuthorisationRule.level(fromAgentValue: value) == level, "\(value)") }
    }

    static func admit(
        _ status: AuthorisationStatus, session: LoginSession, allowance: AccuracyLevel? = nil,
        cap: AccuracyLevel? = nil,
        approximate: Bool = false, requested: AccuracyLevel = .exact
    ) -> Result<AccuracyLevel, Refusal> {
        AuthorisationRule.admission(
            status: status, approximate: approximate, agentAllowance: allowance, requested: requested, session: session,
            cap: cap)
    }

    @Test func whenInUseNeedsAnActiveSessionOrNoLogind() {
        #expect(Self.admit(.authorisedWhenInUse, session: .active) == .success(.exact))
        #expect(Self.admit(.authorisedWhenInUse, session: .unknown) == .success(.exact))
        #expect(Self.admit(.authorisedWhenInUse, session: .inactive) == .failure(.sessionInactive))
        #expect(Self.admit(.authorisedWhenInUse, session: .outside) == .failure(.outsideSession))
        for session in [LoginSession.active, .inactive, .outside, .unknown] {
            #expect(Self.admit(.authorisedAlways, session: session) == .success(.exact))
        }
        for status in [AuthorisationStatus.notDetermined, .restricted, .denied] {
            #expect(Self.admit(status, session: .active) == .failure(.notAuthorised(status)))
        }
    }

    @Test func anAgentsAllowanceCountsAsWhenInUseForThatStart() {
        #expect(Self.admit(.notDetermined, session: .active, allowance: .street) == .success(.street))
        #expect(Self.admit(.notDetermined, session: .inactive, allowance: .exact) == .failure(.sessionInactive))
        #expect(Self.admit(.notDetermined, session: .active, allowance: .exact, requested: .city) == .success(.city))
        #expect(!AuthorisationRule.followsSession(.notDetermined, agentAllowance: nil))
        #expect(AuthorisationRule.followsSession(.notDetermined, agentAllowance: .city))
        #expect(AuthorisationRule.followsSession(.authorisedWhenInUse, agentAllowance: nil))
        #expect(!AuthorisationRule.followsSession(.authorisedAlways, agentAllowance: .city))
    }

    @Test func theAgentsCapLimitsEveryClientAndZeroRefuses() {
        #expect(Self.admit(.authorisedAlways, session: .outside, cap: .city) == .success(.city))
        #expect(Self.admit(.authorisedAlways, session: .outside, cap: .exact, requested: .street) == .success(.street))
        #expect(Self.admit(.authorisedAlways, session: .outside, cap: AccuracyLevel.none) == .failure(.disabledByAgent))
        #expect(Self.admit(.authorisedAlways, session: .active, cap: .street, approximate: true) == .success(.city))
        #expect(
            AuthorisationRule.permittedLevel(
                requested: .exact, approximate: false, agentAllowance: .neighborhood, cap: .street)
                == .neighborhood)
    }

    /// Fixes are coarsened only where the user or administrator limited the app below its request: the level an
    /// app asks chooses providers, as in GeoClue, and never coarsens what it is served.
    @Test func onlyALimitBelowTheRequestCoarsensWhatIsShown() {
        func shown(
            _ requested: AccuracyLevel, approximate: Bool = false, allowance: AccuracyLevel? = nil,
            cap: AccuracyLevel? = nil
        ) -> AccuracyLevel {
            AuthorisationRule.shownLevel(
                requested: requested, approximate: approximate, agentAllowance: allowance, cap: cap)
        }
        #expect(shown(.street) == .exact)
        #expect(shown(.city) == .exact)
        // GNOME's agent allows what was asked, and caps at exact: no limit.
        #expect(shown(.city, allowance: .city, cap: .exact) == .exact)
        #expect(shown(.exact, allowance: .street) == .street)
        #expect(shown(.exact, cap: .neighborhood) == .neighborhood)
        #expect(shown(.street, allowance: .neighborhood, cap: .city) == .city)
        // The user's cap is a ceiling on every app: a city request under a street cap never sees finer than
        // street, whatever another app's request started.
        #expect(shown(.city, cap: .street) == .street)
        #expect(shown(.exact, allowance: .exact, cap: .exact) == .exact)
        // An approximate grant limits to city whatever the app asked.
        #expect(shown(.exact, approximate: true) == .city)
        #expect(shown(.country, approximate: true) == .city)
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
        "# whereabouts grants 3\n",
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
            _ = try GrantStore.parse(
                GrantStore.header + "\n1000\tx\tmaybe\tprecise\n", file: "/var/lib/whereabouts/grants")
            Issue.record("expected an error")
        } catch {
            #expect(error.description.hasPrefix("/var/lib/whereabouts/grants:2: "))
        }
    }
}
