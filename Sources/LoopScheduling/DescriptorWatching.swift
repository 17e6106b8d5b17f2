import Loop
import WhereaboutsCore

/// The event loop as the providers' ``DescriptorWatcher``: actions run on the loop thread.
extension EventLoop: DescriptorWatcher {
    @discardableResult
    public func watchDescriptor(
        _ descriptor: Int32, for readiness: DescriptorReadiness, _ action: @escaping @Sendable () -> Void
    ) -> DescriptorWatch {
        let events: IOEvents =
            switch readiness {
            case .readable: .readable
            case .writable: .writable
            }
        let id = addWatch(fd: descriptor, events: events) { _ in action() }
        return DescriptorWatch(number: id.raw)
    }

    public func cancelWatch(_ watch: DescriptorWatch) { removeWatch(WatchID(raw: watch.number)) }
}

extension DescriptorWatcher {
    /// Runs `action` as `@BusActor` code whenever `descriptor` is ready for `readiness`. The watcher must run its
    /// actions on the loop thread, as the event loop does.
    @discardableResult
    public func watchOnBus(
        _ descriptor: Int32, for readiness: DescriptorReadiness, _ action: @escaping @BusActor @Sendable () -> Void
    ) -> DescriptorWatch {
        watchDescriptor(descriptor, for: readiness) { BusActor.assumeIsolated(action) }
    }
}
