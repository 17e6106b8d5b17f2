import CDBus
import Loop

/// A C pointer handed between the loop's callbacks; it is only ever used on the loop thread.
struct LoopPointer: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// Driving libdbus from ``EventLoop/main``: its watches, timeouts and dispatch status.
extension Connection {
    func attachToLoop() {
        let context = Unmanaged.passRetained(self).toOpaque()
        dbus_connection_set_watch_functions(
            raw,
            { watch, context in
                Connection.addWatch(watch!, of: Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue())
            },
            { watch, _ in Connection.removeWatch(watch!) },
            { watch, _ in Connection.toggleWatch(watch!) },
            context, nil)
        dbus_connection_set_timeout_functions(
            raw,
            { timeout, _ in Connection.addTimeout(timeout!) },
            { timeout, _ in Connection.removeTimeout(timeout!) },
            { timeout, _ in Connection.toggleTimeout(timeout!) },
            nil, nil)
        dbus_connection_set_dispatch_status_function(
            raw,
            { _, status, context in
                guard status == DBUS_DISPATCH_DATA_REMAINS else { return }
                let connection = Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue()
                EventLoop.main.execute { connection.drain() }
            }, context, nil)
        dbus_connection_add_filter(raw, Connection.filterFunction, context, nil)
        var vtable = DBusObjectPathVTable()
        vtable.message_function = { _, message, context in
            let connection = Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue()
            let wrapped = Message(retaining: message!)
            guard wrapped.kind == .methodCall else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            BusActor.assumeIsolated { connection.enqueueCall(wrapped) }
            return DBUS_HANDLER_RESULT_HANDLED
        }
        dbus_connection_register_fallback(raw, "/", &vtable, context)
        EventLoop.main.execute { self.drain() }
    }

    static let filterFunction: DBusHandleMessageFunction = { _, message, context in
        let connection = Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue()
        let wrapped = Message(retaining: message!)
        let handled = BusActor.assumeIsolated { connection.handleFiltered(wrapped) }
        return handled ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }

    /// Dispatches every message already read, then serves the waiting calls in turn; a closed connection is left
    /// alone.
    func drain() {
        dispatchRead()
        serveCalls()
    }

    /// Dispatches every message libdbus has read: signals and replies are handled, method calls queued.
    func dispatchRead() {
        while !closed && dbus_connection_dispatch(raw) == DBUS_DISPATCH_DATA_REMAINS {}
    }

    private final class WatchBox {
        var id: WatchID?
    }

    private final class TimeoutBox {
        var timer: TimerID?
        /// Set when libdbus removes the timeout; its pointer may be freed and reused after that.
        var removed = false
    }

    private static func events(of watch: OpaquePointer) -> IOEvents {
        guard dbus_watch_get_enabled(watch) != 0 else { return [] }
        let flags = dbus_watch_get_flags(watch)
        var events: IOEvents = []
        if flags & DBUS_WATCH_READABLE.rawValue != 0 { events.insert(.readable) }
        if flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events.insert(.writable) }
        return events
    }

    /// Watches `watch`'s descriptor on the loop; once libdbus has written what the socket took, `connection` looks
    /// whether what is held for the bus may go again (``Connection/resumeIfBusCaughtUp()``).
    private static func addWatch(_ watch: OpaquePointer, of connection: Connection) -> dbus_bool_t {
        let box = WatchBox()
        let handle = LoopPointer(pointer: watch)
        box.id = EventLoop.main.addWatch(fd: dbus_watch_get_unix_fd(watch), events: events(of: watch)) {
            [weak connection] ready in
            var flags: UInt32 = 0
            if ready.contains(.readable) { flags |= DBUS_WATCH_READABLE.rawValue }
            if ready.contains(.writable) { flags |= DBUS_WATCH_WRITABLE.rawValue }
            if ready.contains(.error) { flags |= DBUS_WATCH_ERROR.rawValue }
            if ready.contains(.hangup) { flags |= DBUS_WATCH_HANGUP.rawValue }
            dbus_watch_handle(handle.pointer, flags)
            if ready.contains(.writable) { connection?.resumeIfBusCaughtUp() }
        }
        dbus_watch_set_data(watch, Unmanaged.passRetained(box).toOpaque()) { data in
            Unmanaged<WatchBox>.fromOpaque(data!).release()
        }
        return 1
    }

    private static func removeWatch(_ watch: OpaquePointer) {
        guard let data = dbus_watch_get_data(watch) else { return }
        let box = Unmanaged<WatchBox>.fromOpaque(data).takeUnretainedValue()
        if let id = box.id { EventLoop.main.removeWatch(id) }
        box.id = nil
    }

    private static func toggleWatch(_ watch: OpaquePointer) {
        guard let data = dbus_watch_get_data(watch) else { return }
        let box = Unmanaged<WatchBox>.fromOpaque(data).takeUnretainedValue()
        if let id = box.id { EventLoop.main.updateWatch(id, events: events(of: watch)) }
    }

    private static func addTimeout(_ timeout: OpaquePointer) -> dbus_bool_t {
        let box = TimeoutBox()
        dbus_timeout_set_data(timeout, Unmanaged.passRetained(box).toOpaque()) { data in
            Unmanaged<TimeoutBox>.fromOpaque(data!).release()
        }
        arm(timeout, box)
        return 1
    }

    private static func arm(_ timeout: OpaquePointer, _ box: TimeoutBox) {
        if let timer = box.timer { EventLoop.main.cancel(timer) }
        box.timer = nil
        guard dbus_timeout_get_enabled(timeout) != 0 else { return }
        let handle = LoopPointer(pointer: timeout)
        box.timer = EventLoop.main.schedule(after: .milliseconds(Int(dbus_timeout_get_interval(timeout)))) {
            box.timer = nil
            dbus_timeout_handle(handle.pointer)
            if box.timer == nil, !box.removed { arm(handle.pointer, box) }
        }
    }

    private static func removeTimeout(_ timeout: OpaquePointer) {
        guard let data = dbus_timeout_get_data(timeout) else { return }
        let box = Unmanaged<TimeoutBox>.fromOpaque(data).takeUnretainedValue()
        if let timer = box.timer { EventLoop.main.cancel(timer) }
        box.timer = nil
        box.removed = true
    }

    private static func toggleTimeout(_ timeout: OpaquePointer) {
        guard let data = dbus_timeout_get_data(timeout) else { return }
        arm(timeout, Unmanaged<TimeoutBox>.fromOpaque(data).takeUnretainedValue())
    }
}
