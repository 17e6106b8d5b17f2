import DBus
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsProviders

/// Scan rounds: asking every interface to scan, reading each as it reports, and reporting them together.
extension WPASupplicantScanner {
    /// Starts a round when started, none runs, and there is something to scan.
    func beginRound() {
        guard schedule.isStarted, round == nil, let owner = daemon.owner, !known.isEmpty else { return }
        schedule.cancelPending()
        let id = openRound(waiting: Set(known))
        for path in known {
            BusActor.task { [self] in await requestScan(path, owner: owner, round: id) }
        }
    }

    private func openRound(waiting: Set<ObjectPath>) -> UInt64 {
        let id = daemon.newRoundID()
        let timeout = timers.scheduleOnBus(after: daemon.roundTimeout) { [weak self] in self?.roundTimedOut(id) }
        round = Round(id: id, waiting: waiting, timeout: timeout)
        return id
    }

    private func requestScan(_ path: ObjectPath, owner: String, round id: UInt64) async {
        do {
            _ = try await daemon.calls.call(
                owner, path, Self.interfaceInterface, "Scan", [.vardict(["Type": .string("passive")])])
        } catch {
            logger.debug("wpa_supplicant did not scan on \(path), which is left out of this round: \(error)")
            guard round?.id == id else { return }
            round?.waiting.remove(path)
            finishRoundIfComplete()
        }
    }

    func scanDone(_ message: Message) {
        guard daemon.sent(message), let owner = daemon.owner, let path = message.path,
            known.contains(path), schedule.isStarted
        else { return }
        let arguments = message.arguments()
        guard arguments.count == 1, let success = arguments[0].bool else {
            logger.warning("wpa_supplicant sent ScanDone with (\(message.signature)), not (b)")
            return
        }
        guard let current = round else {
            // Someone else's scan, or wpa_supplicant's own: every interface's list is read.
            guard success else { return }
            logger.debug("a scan on \(path) that was not asked for finished; reading every interface")
            schedule.cancelPending()
            let id = openRound(waiting: [])
            for interface in known { read(interface, owner: owner, round: id) }
            return
        }
        guard current.results[path] == nil, !current.reading.contains(path) else { return }
        if !success { logger.debug("wpa_supplicant's scan on \(path) failed; its current list is read") }
        round?.waiting.remove(path)
        read(path, owner: owner, round: current.id)
    }

    private func read(_ path: ObjectPath, owner: String, round id: UInt64) {
        round?.reading.insert(path)
        BusActor.task { [self] in
            let points = await accessPoints(of: path, owner: owner)
            guard let current = round, current.id == id, current.reading.contains(path) else { return }
            round?.reading.remove(path)
            if let points { round?.results[path] = points }
            finishRoundIfComplete()
        }
    }

    private func roundTimedOut(_ id: UInt64) {
        guard let current = round, current.id == id else { return }
        round?.timeout = nil
        let late = current.waiting.union(current.reading).map(\.rawValue).sorted()
        logger.debug(
            "wpa_supplicant's interfaces \(late.joined(separator: ", ")) did not report within \(daemon.roundTimeout)")
        finishRound()
    }

    func finishRoundIfComplete() {
        guard let current = round, current.waiting.isEmpty, current.reading.isEmpty else { return }
        finishRound()
    }

    /// Ends the round: reports what was read (if anything) and arms the next round.
    private func finishRound() {
        guard let finished = round else { return }
        if let timeout = finished.timeout { timers.cancelTimer(timeout) }
        round = nil
        if !finished.results.isEmpty {
            var union = AccessPointUnion()
            for path in known { if let points = finished.results[path] { union.add(points) } }
            onScan?(union.accessPoints)
        }
        schedule.scheduleNext()
    }

    /// Drops the running round, if any; what it still reads is ignored.
    func abortRound() {
        if let timeout = round?.timeout { timers.cancelTimer(timeout) }
        round = nil
    }

}
