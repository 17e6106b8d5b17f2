import DBus
import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsProviders

/// Scan rounds: asking every Wi-Fi device to scan, waiting for them, then reading and reporting every list.
extension NetworkManagerScanner {
    func beginRound() {
        guard schedule.isStarted, round == nil, let owner = daemon.owner, !devices.isEmpty else { return }
        cancelHint()
        let waiting = Set(devices.filter { $0.lastScan != nil }.map(\.path))
        let id = openRound(waiting: waiting, settling: devices.contains { $0.lastScan == nil })
        for device in devices {
            BusActor.task { [self] in await requestScan(device.path, owner: owner, round: id) }
        }
    }

    /// Opens a round (cancelling the next one's timer) and arms its timeout and, with `settling`, its settle
    /// delay.
    func openRound(waiting: Set<ObjectPath>, settling: Bool) -> UInt64 {
        schedule.cancelPending()
        let id = daemon.newRoundID()
        var opened = Round(id: id, waiting: waiting, settling: settling)
        opened.timers.append(timers.scheduleOnBus(after: daemon.roundTimeout) { [weak self] in self?.timedOut(id) })
        if settling {
            opened.timers.append(timers.scheduleOnBus(after: settleDelay) { [weak self] in self?.settled(id) })
        }
        round = opened
        return id
    }

    private func requestScan(_ path: ObjectPath, owner: String, round id: UInt64) async {
        do {
            _ = try await daemon.calls.call(owner, path, Self.wirelessInterface, "RequestScan", [.vardict([:])])
        } catch {
            logger.debug("NetworkManager did not scan on \(path); its current list is read: \(error)")
            guard round?.id == id else { return }
            round?.waiting.remove(path)
            finishWaitingIfDone()
        }
    }

    private func settled(_ id: UInt64) {
        guard round?.id == id else { return }
        round?.settling = false
        finishWaitingIfDone()
    }

    private func timedOut(_ id: UInt64) {
        guard let current = round, current.id == id, !current.reading else { return }
        let late = current.waiting.map(\.rawValue).sorted()
        logger.debug(
            "NetworkManager's devices \(late.joined(separator: ", ")) did not finish scanning within \(daemon.roundTimeout)"
        )
        readAndReport(round: id)
    }

    func finishWaitingIfDone() {
        guard let current = round, !current.reading, current.waiting.isEmpty, !current.settling else { return }
        readAndReport(round: current.id)
    }

    /// Reads every Wi-Fi device's access points, reports them, and arms the next round.
    func readAndReport(round id: UInt64) {
        guard let current = round, current.id == id, !current.reading else { return }
        guard let owner = daemon.owner else {
            abortRound()
            return
        }
        for timer in current.timers { timers.cancelTimer(timer) }
        round?.timers = []
        round?.reading = true
        let paths = devices.map(\.path)
        BusActor.task { [self] in
            var union = AccessPointUnion()
            var anyRead = false
            for path in paths {
                guard let points = await accessPoints(of: path, owner: owner) else { continue }
                anyRead = true
                union.add(points)
            }
            guard round?.id == id else { return }
            round = nil
            if anyRead { onScan?(union.accessPoints) }
            schedule.scheduleNext()
        }
    }

    func abortRound() {
        for timer in round?.timers ?? [] { timers.cancelTimer(timer) }
        round = nil
    }

    func cancelHint() {
        if let hint { timers.cancelTimer(hint) }
        hint = nil
    }

}
