import CPolkit
import Loop
import Synchronization
import WhereaboutsCore

#if canImport(Glibc)
    import Glibc
#endif

/// A polkit check that did not give an answer: polkit is absent, failed or did not answer in time.
public struct PolkitError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// polkit's `CheckAuthorization`, through libpolkit-gobject-1 on a thread and GLib main context of its own.
///
/// The library (and with it GLib, GObject and GIO), the thread, its context and the authority object are loaded
/// and made on the first check, so a daemon that checks nothing pays nothing for them. Checks run concurrently and
/// never block the bus thread; each is cancelled after its timeout, so a polkit that does not answer gives a
/// ``PolkitError`` rather than a hang. The subject is the caller's unique bus name, which cannot be raced the way
/// a process id can.
public final class PolkitAuthority: Sendable {
    /// The answer a completion receives.
    public typealias Completion = @BusActor @Sendable (Result<PolkitAnswer, PolkitError>) -> Void

    private let context = Mutex<PolkitThread?>(nil)

    public init() {}

    /// Asks polkit whether the connection `busName` may do `action`; `details` reach rules and messages.
    ///
    /// `interactive` lets polkit ask the user through their authentication agent, which may take minutes; the
    /// completion then runs when the user has answered or `timeout` passed.
    public func check(
        busName: String, action: String, details: [String: String], interactive: Bool, timeout: Duration,
        completion: @escaping Completion
    ) {
        let thread = context.withLock { thread in
            if let thread { return thread }
            let made = PolkitThread()
            thread = made
            return made
        }
        thread.submit(
            PolkitRequest(
                busName: busName, action: action, details: details, interactive: interactive,
                timeoutMilliseconds: UInt32(
                    clamping: max(
                        1, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)),
                completion: completion))
    }
}

extension PolkitAuthority: Authoriser {
    /// The service's ``Authoriser``: ``check(busName:action:details:interactive:timeout:completion:)`` awaited, a
    /// check without an answer a failure that denies.
    public func check(busName: String, action: String, details: [String: String], interactive: Bool, timeout: Duration)
        async -> Result<PolkitAnswer, AuthorisationFailure>
    {
        await withCheckedContinuation { continuation in
            check(busName: busName, action: action, details: details, interactive: interactive, timeout: timeout) {
                continuation.resume(returning: $0.mapError { AuthorisationFailure($0.message) })
            }
        }
    }
}

/// One check in flight, handed to the GLib thread and back.
final class PolkitRequest: @unchecked Sendable {
    let busName: String
    let action: String
    let details: [String: String]
    let interactive: Bool
    let timeoutMilliseconds: UInt32
    let completion: PolkitAuthority.Completion
    var cancellable: OpaquePointer?
    var timeoutSource: OpaquePointer?
    var authority: OpaquePointer?

    init(
        busName: String, action: String, details: [String: String], interactive: Bool, timeoutMilliseconds: UInt32,
        completion: @escaping PolkitAuthority.Completion
    ) {
        self.busName = busName
        self.action = action
        self.details = details
        self.interactive = interactive
        self.timeoutMilliseconds = timeoutMilliseconds
        self.completion = completion
    }

    /// Hands the answer to the bus thread.
    func finish(_ result: Result<PolkitAnswer, PolkitError>) {
        let completion = self.completion
        EventLoop.main.execute { completion(result) }
    }
}

/// The GLib thread: it loads the library, then runs polkit's asynchronous calls on a main context and loop of
/// its own. Checks submitted while it loads wait in a queue; if the library cannot be loaded, they and every
/// later check fail with the loader's reason.
final class PolkitThread: @unchecked Sendable {
    private enum State {
        case loading(queued: [PolkitRequest])
        case ready(glib: wb_polkit_api, context: MainContext)
        case failed(String)
    }

    private let state = Mutex<State>(.loading(queued: []))
    /// Set on the GLib thread before the first check starts there, and read only there.
    private var glib: wb_polkit_api?
    private var context: OpaquePointer?
    private var authority: OpaquePointer?

    init() {
        var thread = pthread_t()
        let unmanaged = Unmanaged.passRetained(self).toOpaque()
        pthread_create(
            &thread, nil,
            { argument in
                let owner = Unmanaged<PolkitThread>.fromOpaque(argument!).takeRetainedValue()
                owner.run()
                return nil
            }, unmanaged)
        pthread_detach(thread)
    }

    private func run() {
        var reason = [CChar](repeating: 0, count: 512)
        guard let table = wb_polkit_load(&reason, reason.count) else {
            let text =
                "polkit is not available: \(String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))"
            let queued = state.withLock { state in
                defer { state = .failed(text) }
                if case .loading(let queued) = state { return queued }
                return []
            }
            for request in queued { request.finish(.failure(PolkitError(message: text))) }
            return
        }
        let glib = table.pointee
        self.glib = glib
        guard let context = glib.g_main_context_new() else { return }
        self.context = context
        glib.g_main_context_push_thread_default(context)
        let queued = state.withLock { state in
            defer { state = .ready(glib: glib, context: MainContext(pointer: context)) }
            if case .loading(let queued) = state { return queued }
            return []
        }
        for request in queued { start(request) }
        let loop = glib.g_main_loop_new(context, 0)
        glib.g_main_loop_run(loop)
    }

    /// Runs `request` on the GLib thread, once the library is loaded.
    func submit(_ request: PolkitRequest) {
        enum Next {
            case queued
            case invoke(wb_polkit_api, MainContext)
            case fail(String)
        }
        let next: Next = state.withLock { state in
            switch state {
            case .loading(var queued):
                queued.append(request)
                state = .loading(queued: queued)
                return .queued
            case .ready(let glib, let context): return .invoke(glib, context)
            case .failed(let text): return .fail(text)
            }
        }
        switch next {
        case .queued: return
        case .fail(let text): request.finish(.failure(PolkitError(message: text)))
        case .invoke(let glib, let context):
            let box = Unmanaged.passRetained(CheckOnThread(thread: self, request: request)).toOpaque()
            glib.g_main_context_invoke_full(
                context.pointer, WB_G_PRIORITY_DEFAULT,
                { data in
                    let submission = Unmanaged<CheckOnThread>.fromOpaque(data!).takeRetainedValue()
                    submission.thread.start(submission.request)
                    return 0
                }, box, nil)
        }
    }

    /// A GLib main context, which any thread may hand work to (`g_main_context_invoke_full` is thread-safe).
    private struct MainContext: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// A check and the thread that runs it, handed through GLib's `gpointer` callbacks (to start it, and with
    /// polkit's answer).
    private final class CheckOnThread {
        let thread: PolkitThread
        let request: PolkitRequest
        init(thread: PolkitThread, request: PolkitRequest) {
            self.thread = thread
            self.request = request
        }
    }

    /// On the GLib thread: sends the check.
    private func start(_ request: PolkitRequest) {
        guard let glib else { return }
        if authority == nil {
            var error: UnsafeMutablePointer<GError>? = nil
            authority = glib.polkit_authority_get_sync(nil, &error)
            if authority == nil {
                request.finish(.failure(PolkitError(message: "polkit is not available: \(message(of: error))")))
                if let error { glib.g_error_free(error) }
                return
            }
        }
        request.authority = authority
        let subject = glib.polkit_system_bus_name_new(request.busName)
        let details = glib.polkit_details_new()
        for (key, value) in request.details { glib.polkit_details_insert(details, key, value) }
        let cancellable = glib.g_cancellable_new()
        request.cancellable = cancellable
        let flags =
            request.interactive
            ? POLKIT_CHECK_AUTHORIZATION_FLAGS_ALLOW_USER_INTERACTION : POLKIT_CHECK_AUTHORIZATION_FLAGS_NONE
        let retained = Unmanaged.passRetained(CheckOnThread(thread: self, request: request)).toOpaque()
        request.timeoutSource = cancelLater(glib, context, request.timeoutMilliseconds, cancellable)
        glib.polkit_authority_check_authorization(
            authority, subject, request.action, details, flags, cancellable,
            { _, result, data in
                let pending = Unmanaged<CheckOnThread>.fromOpaque(data!).takeRetainedValue()
                pending.thread.complete(pending.request, result)
            }, retained)
        glib.g_object_unref(UnsafeMutableRawPointer(subject))
        glib.g_object_unref(UnsafeMutableRawPointer(details))
    }

    /// On the GLib thread: reads the answer.
    private func complete(_ request: PolkitRequest, _ asyncResult: OpaquePointer?) {
        guard let glib else { return }
        if let source = request.timeoutSource {
            glib.g_source_destroy(source)
            glib.g_source_unref(source)
        }
        var error: UnsafeMutablePointer<GError>? = nil
        let answer = glib.polkit_authority_check_authorization_finish(request.authority, asyncResult, &error)
        if let cancellable = request.cancellable { glib.g_object_unref(UnsafeMutableRawPointer(cancellable)) }
        guard let answer else {
            let cancelled =
                error.map {
                    glib.g_error_matches($0, glib.g_io_error_quark(), WB_G_IO_ERROR_CANCELLED) != 0
                } ?? false
            let text =
                cancelled
                ? "polkit did not answer in \(seconds(request.timeoutMilliseconds))"
                : "polkit failed: \(message(of: error))"
            if let error { glib.g_error_free(error) }
            request.finish(.failure(PolkitError(message: text)))
            return
        }
        let result: PolkitAnswer =
            glib.polkit_authorization_result_get_is_authorized(answer) != 0
            ? .yes : glib.polkit_authorization_result_get_is_challenge(answer) != 0 ? .challenge : .no
        glib.g_object_unref(UnsafeMutableRawPointer(answer))
        request.finish(.success(result))
    }
}

/// Cancels `cancellable` after `milliseconds` on `context`; returns the timeout source, which
/// the caller destroys and releases when the check ends first.
private func cancelLater(
    _ glib: wb_polkit_api, _ context: OpaquePointer?, _ milliseconds: UInt32, _ cancellable: OpaquePointer?
) -> OpaquePointer? {
    let source = glib.g_timeout_source_new(milliseconds)
    let timer = Unmanaged.passRetained(CancelTimer(glib: glib, cancellable: cancellable)).toOpaque()
    glib.g_source_set_callback(
        source,
        { data in
            let timer = Unmanaged<CancelTimer>.fromOpaque(data!).takeUnretainedValue()
            timer.glib.g_cancellable_cancel(timer.cancellable)
            return 0
        }, timer, { data in Unmanaged<CancelTimer>.fromOpaque(data!).release() })
    _ = glib.g_source_attach(source, context)
    return source
}

/// What a timeout source holds: a reference to the cancellable it cancels, dropped with the source.
private final class CancelTimer {
    let glib: wb_polkit_api
    let cancellable: OpaquePointer?

    init(glib: wb_polkit_api, cancellable: OpaquePointer?) {
        self.glib = glib
        self.cancellable = cancellable
        _ = glib.g_object_ref(UnsafeMutableRawPointer(cancellable))
    }

    deinit { glib.g_object_unref(UnsafeMutableRawPointer(cancellable)) }
}

/// `milliseconds` as "10 s" or "0.5 s".
private func seconds(_ milliseconds: UInt32) -> String {
    milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(Double(milliseconds) / 1000) s"
}

private func message(of error: UnsafeMutablePointer<GError>?) -> String {
    guard let error, let text = error.pointee.message else { return "unknown error" }
    return String(cString: text)
}
