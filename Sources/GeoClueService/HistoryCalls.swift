import DBus
import Loop
import WhereaboutsCore

/// The record of location use on the bus: `io.github.whereabouts1.Manager.GetHistory` and `ClearHistory`, and the
/// lookups the composition root reports.
extension GeoClueService {
    /// `io.github.whereabouts1.Manager.GetHistory(b all_users, t since) → (a(usttubas) uses, a(utssuusdas)
    /// lookups)`: the caller's own user's record, or every user's with the management action (see the interface's
    /// XML for the fields).
    func getHistory(_ call: MethodCall, allUsers: Bool, since: WallTime) {
        BusActor.task { [self] in
            do throws(DBusError) {
                let uid = try await uid(of: call.sender)
                if allUsers { try await requireManagement(call) }
                call.replyInTurn { [self] in
                    var uses: [DBusValue] = []
                    var lookups: [DBusValue] = []
                    for user in allUsers ? history.users : [uid] {
                        for entry in history.entries(ofUser: user, since: since) {
                            switch entry {
                            case .use(let use): uses.append(use.busValue(user: user))
                            case .lookup(let lookup): lookups.append(lookup.busValue(user: user))
                            }
                        }
                    }
                    return [.array(element: "(usttubas)", uses), .array(element: "(utssuusdas)", lookups)]
                }
            } catch {
                call.fail(error)
            }
        }
    }

    /// `io.github.whereabouts1.Manager.ClearHistory(u uid)`: forgets a user's record. A user may clear their own;
    /// another user's needs the management action, as revoking their grants does.
    func clearHistory(_ call: MethodCall, uid target: UInt32) {
        BusActor.task { [self] in
            do throws(DBusError) {
                let uid = try await uid(of: call.sender)
                if uid != target { try await requireManagement(call) }
                history.clear(user: target)
                logger.notice("history: the record of user \(target) was cleared by user \(uid)")
                call.reply()
            } catch {
                call.fail(error)
            }
        }
    }

    /// Records a request that left the machine for a positioning service (``NetworkLookup``) in the history of
    /// each user whose apps needed the provider that sent it: those served at that provider's level (as
    /// ``providerStatus`` lists it) or finer; a contribution, sent from satellite fixes, by exact clients.
    public func recordLookup(_ lookup: NetworkLookup) {
        let provider = lookup.kind.provider?.rawValue
        let level = providerStatus?().first { $0.kind == provider }?.level ?? .exact
        history.record(lookup, neededLevel: level)
    }
}

extension AppUse {
    /// A row of `GetHistory`'s uses.
    func busValue(user: UInt32) -> DBusValue {
        .structure([
            .uint32(user), .string(app), .uint64(Self.milliseconds(started)),
            .uint64(stopped.map(Self.milliseconds) ?? 0), .uint32(level.rawValue), .boolean(approximate),
            .strings(providers.map(\.rawValue)),
        ])
    }

    static func milliseconds(_ time: WallTime) -> UInt64 { UInt64(max(0, time.microseconds / 1000)) }
}

extension NetworkLookup {
    /// A row of `GetHistory`'s lookups.
    func busValue(user: UInt32) -> DBusValue {
        .structure([
            .uint32(user), .uint64(AppUse.milliseconds(time)), .string(kind.rawValue), .string(host),
            .uint32(UInt32(clamping: accessPoints)), .uint32(UInt32(clamping: cells)), .string(outcome.word),
            .double(outcome.accuracy ?? .nan), .strings(apps),
        ])
    }
}
