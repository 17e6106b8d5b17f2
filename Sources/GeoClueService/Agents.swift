import DBus
import Loop
import WhereaboutsCore

/// A GeoClue agent (`org.freedesktop.GeoClue2.Agent` at `/org/freedesktop/GeoClue2/Agent`) that registered with
/// `AddAgent` for its user: the desktop's location switch (`MaxAccuracyLevel`) and prompt (`AuthorizeApp`).
@BusActor
final class Agent {
    static let path = ObjectPath("/org/freedesktop/GeoClue2/Agent")!
    static let interface = BusNames.GeoClue.agentInterface

    let busName: String
    let id: String
    let uid: UInt32
    /// `MaxAccuracyLevel` as a level; nil until first read.
    fileprivate(set) var cap: AccuracyLevel?
    /// The first read of `MaxAccuracyLevel`, which clients of the user wait for.
    fileprivate var firstRead: Task<Void, Never>?
    fileprivate var subscription: SignalSubscription?

    fileprivate init(busName: String, id: String, uid: UInt32) {
        self.busName = busName
        self.id = id
        self.uid = uid
    }
}

/// The kinds of log line agents cause, each rate-limited per user on its own.
enum AgentLine: Hashable, Sendable {
    case registered
    case left
    case unreadable
    case level
    case answer
}

/// A user and a kind of agent log line: what ``RateLimiter`` counts agent lines by.
struct AgentLineKey: Hashable, Sendable {
    let uid: UInt32
    let kind: AgentLine
}

extension GeoClueService {
    /// How long an agent may take to answer `AuthorizeApp` (its user answers a dialog) or a property read: the
    /// D-Bus default GeoClue's calls have, unless `WHEREABOUTS_AGENT_TIMEOUT_MS` gives another (for tests).
    static let defaultAgentTimeout: Duration = .seconds(25)

    /// Logs an agent's line for `uid` unless that user's agents caused too many of its kind lately; the next line
    /// logged says how many were left out.
    private func agentLog(_ priority: LogPriority, uid: UInt32, _ kind: AgentLine, _ message: String) {
        guard let line = agentLines.line(message, for: AgentLineKey(uid: uid, kind: kind), now: clock.monotonicNow)
        else { return }
        logger.log(priority, line)
    }

    /// `AddAgent` from `busName`, run by `uid`, with `id` from the whitelist: `busName` becomes the user's agent.
    ///
    /// GeoClue lets the last agent registered replace the user's; here a user's live agent is not replaced by
    /// another connection (`AccessDenied`), since any process of the user may call `AddAgent` with a whitelisted
    /// id, and a replacement could lift the cap the user set in the real agent. The same connection registering
    /// again keeps its registration; a desktop shell that restarts gets in once its old connection has left the
    /// bus. Where logind can tell, an agent whose process is in no login session of its user (nor the user in a
    /// graphical one) is refused: no desktop would run it there. The agent's `MaxAccuracyLevel` is then read and
    /// followed; until the first read ends, clients of the user that start wait for it (never longer than the
    /// agent timeout). `AddAgent` is answered before the agent is called, so an agent that waits for the answer
    /// cannot deadlock. A sandboxed caller (a Flatpak or Snap app) is refused, as GeoClue refuses a Flatpak app:
    /// an agent answers for every app of its user.
    func registerAgent(busName: String, id: String, uid: UInt32) async throws(DBusError) {
        if let current = agents[uid], current.busName == busName, current.id == id { return }
        let caller = try await identity(of: busName)
        if caller.sandbox != .unconfined, let app = ClientApp(caller: caller, desktopId: nil) {
            throw .accessDenied("\(app) is sandboxed and may not act as an agent, which answers for every app")
        }
        if try await loginSession(of: busName) == .outside {
            throw .accessDenied(
                "an agent must run in a login session of its user; the process of \(busName) (UID \(uid)) is in none")
        }
        // The caller may have left the bus while its session was looked up.
        _ = try await self.uid(of: busName)
        if let current = agents[uid] {
            guard current.busName == busName else {
                throw .accessDenied(
                    "UID \(uid) already has a GeoClue agent (\(current.id)); another may register once it has left the bus"
                )
            }
            dropAgent(current)
        }
        let agent = Agent(busName: busName, id: id, uid: uid)
        agents[uid] = agent
        agentLog(.info, uid: uid, .registered, "agent \(id) registered by \(busName) for UID \(uid)")
        agent.firstRead = BusActor.task { [self] in
            do {
                let subscription = try await connection.subscribe(
                    SignalMatch(
                        sender: busName, path: Agent.path, interface: "org.freedesktop.DBus.Properties",
                        member: "PropertiesChanged", stringArguments: [0: Agent.interface])
                ) { [weak self, weak agent] message in
                    guard let self, let agent else { return }
                    self.agentPropertiesChanged(agent, message)
                }
                // The agent may have left or been replaced while the match was being added.
                guard agents[uid] === agent else {
                    connection.unsubscribe(subscription)
                    return
                }
                agent.subscription = subscription
            } catch {
                agentLog(
                    .warning, uid: uid, .unreadable,
                    "agent \(id) of UID \(uid): cannot follow its MaxAccuracyLevel: \(error)")
            }
            guard agents[uid] === agent else { return }
            await readCap(of: agent)
        }
    }

    /// The agent's cap for `uid`, once its first read has ended; nil without an agent.
    func accuracyCap(uid: UInt32) async -> AccuracyLevel? {
        guard let agent = agents[uid] else { return nil }
        await agent.firstRead?.value
        return agents[uid] === agent ? agent.cap : await accuracyCap(uid: uid)
    }

    /// The agent's cap for `uid` as known now; nil without an agent or before its first read.
    func knownCap(uid: UInt32) -> AccuracyLevel? { agents[uid]?.cap }

    /// True when `uid` has an agent.
    func hasAgent(uid: UInt32) -> Bool { agents[uid] != nil }

    /// Forgets the agents `busName` registered; their users' clients lose the cap.
    func agentVanished(_ busName: String) {
        for agent in agents.values where agent.busName == busName {
            agentLog(.info, uid: agent.uid, .left, "agent \(agent.id) of UID \(agent.uid) left")
            dropAgent(agent)
            agentCapChanged(uid: agent.uid)
        }
    }

    private func dropAgent(_ agent: Agent) {
        if agents[agent.uid] === agent { agents[agent.uid] = nil }
        agent.firstRead?.cancel()
        if let subscription = agent.subscription { connection.unsubscribe(subscription) }
        agent.subscription = nil
    }

    /// Reads `MaxAccuracyLevel`. An agent that cannot say allows nothing, as GeoClue reads a missing value as 0.
    private func readCap(of agent: Agent) async {
        let level: AccuracyLevel
        do throws(DBusError) {
            let value = try await connection.call(
                destination: agent.busName, path: Agent.path, interface: "org.freedesktop.DBus.Properties",
                member: "Get", arguments: [.string(Agent.interface), .string("MaxAccuracyLevel")], timeout: agentTimeout
            ).first?.unwrapped
            guard let raw = value?.uint32 else {
                throw DBusError.failed("MaxAccuracyLevel is \(value?.signature ?? "missing"), not u")
            }
            level = AuthorisationRule.level(fromAgentValue: raw)
        } catch {
            agentLog(
                .warning, uid: agent.uid, .unreadable,
                "agent \(agent.id) of UID \(agent.uid): cannot read MaxAccuracyLevel (\(error)); allowing no location")
            level = .none
        }
        setCap(level, of: agent)
    }

    private func agentPropertiesChanged(_ agent: Agent, _ message: Message) {
        guard agents[agent.uid] === agent, message.sender == agent.busName else { return }
        let arguments = message.arguments()
        guard arguments.count == 3 else { return }
        if let raw = arguments[1].stringKeyedEntries?["MaxAccuracyLevel"]?.unwrapped.uint32 {
            setCap(AuthorisationRule.level(fromAgentValue: raw), of: agent)
        } else if arguments[2].elements?.contains(.string("MaxAccuracyLevel")) == true {
            BusActor.task { [self] in await readCap(of: agent) }
        }
    }

    private func setCap(_ level: AccuracyLevel, of agent: Agent) {
        guard agents[agent.uid] === agent, agent.cap != level else { return }
        agent.cap = level
        agentLog(
            .info, uid: agent.uid, .level, "agent \(agent.id) of UID \(agent.uid): MaxAccuracyLevel \(level.rawValue)")
        agentCapChanged(uid: agent.uid)
    }

    /// `AuthorizeApp(s desktop_id, u req_accuracy_level) → (b authorized, u allowed_accuracy_level)` on the agent
    /// of `uid`: the level it allows `app`, or nil when it refuses (or allows level 0). No answer within the agent
    /// timeout, or a malformed one, is a failure, which denies.
    func authorizeApp(uid: UInt32, app: String, level: AccuracyLevel) async -> Result<
        AccuracyLevel?, AuthorisationFailure
    > {
        guard let agent = agents[uid] else {
            return .failure(AuthorisationFailure("no agent is registered for UID \(uid)"))
        }
        let reply: [DBusValue]
        do throws(DBusError) {
            reply = try await connection.call(
                destination: agent.busName, path: Agent.path, interface: Agent.interface, member: "AuthorizeApp",
                arguments: [.string(app), .uint32(level.rawValue)], timeout: agentTimeout)
        } catch  where error.name == DBusError.Name.noReply {
            return .failure(AuthorisationFailure("the agent \(agent.id) did not answer within \(agentTimeout)"))
        } catch {
            return .failure(AuthorisationFailure("the agent \(agent.id) failed: \(error)"))
        }
        guard reply.count == 2, let authorised = reply[0].bool, let allowed = reply[1].uint32 else {
            return .failure(AuthorisationFailure("the agent \(agent.id) answered AuthorizeApp with a malformed reply"))
        }
        let allowedLevel = AuthorisationRule.level(fromAgentValue: allowed)
        agentLog(
            .info, uid: uid, .answer,
            "agent \(agent.id) \(authorised ? "allowed" : "refused") '\(app)' for UID \(uid) (level \(allowed))")
        return .success(authorised && allowedLevel != .none ? allowedLevel : nil)
    }
}
