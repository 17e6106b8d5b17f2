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
/// The thread, its context and the authority object are made on the first check, so a daemon that checks
/// nothing pays nothing. Checks run concurrently and never block the bus thread; each is cancelled after its
/// timeout, so a polkit that does not answer gives a ``PolkitError`` rather than a hang. The subject is the
/// caller's unique bus name, which cannot be raced the way a process id can.
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
        thread.submit(PolkitRequest(
            busName: busName, action: action, details: details, interactive: interactive,
            timeoutMilliseconds: UInt32(clamping: max(1, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)),
            completion: completion))
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
    var cancellable: UnsafeMutablePointer<GCancellable>?
    var timeoutSource: UnsafeMutablePointer<GSource>?
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

/// The GLib thread: a main context and loop that run polkit's asynchronous calls.
final class PolkitThread: @unchecked Sendable {
    private let context: OpaquePointer
    private var authority: OpaquePointer?

    init() {
        context = g_main_context_new()
        var thread = pthread_t()
        let unmanaged = Unmanaged.passRetained(self).toOpaque()
        pthread_create(&thread, nil, { argument in
            let owner = Unmanaged<PolkitThread>.fromOpaque(argument!).takeRetainedValue()
            owner.run()
            return nil
        }, unmanaged)
        pthread_detach(thread)
    }

    private func run() {
        g_main_context_push_thread_default(context)
        let loop = g_main_loop_new(context, 0)
        g_main_loop_run(loop)
    }

    /// Runs `request` on the GLib thread.
    func submit(_ request: PolkitRequest) {
        let box = Unmanaged.passRetained(Submission(thread: self, request: request)).toOpaque()
        g_main_context_invoke_full(context, G_PRIORITY_DEFAULT, { data in
            let submission = Unmanaged<Submission>.fromOpaque(data!).takeRetainedValue()
            submission.thread.start(submission.request)
            return 0
        }, box, nil)
    }

    private final class Submission {
        let thread: PolkitThread
        let request: PolkitRequest
        init(thread: PolkitThread, request: PolkitRequest) {
            self.thread = thread
            self.request = request
        }
    }

    /// On the GLib thread: sends the check.
    private func start(_ request: PolkitRequest) {
        if authority == nil {
            var error: UnsafeMutablePointer<GError>? = nil
            authority = polkit_authority_get_sync(nil, &error)
            if authority == nil {
                request.finish(.failure(PolkitError(message: "polkit is not available: \(message(of: error))")))
                if let error { g_error_free(error) }
                return
            }
        }
        request.authority = authority
        let subject = polkit_system_bus_name_new(request.busName)
        let details = polkit_details_new()
        for (key, value) in request.details { polkit_details_insert(details, key, value) }
        let cancellable = g_cancellable_new()
        request.cancellable = cancellable
        let flags =
            request.interactive
            ? POLKIT_CHECK_AUTHORIZATION_FLAGS_ALLOW_USER_INTERACTION : POLKIT_CHECK_AUTHORIZATION_FLAGS_NONE
        let retained = Unmanaged.passRetained(request).toOpaque()
        request.timeoutSource = cancelLater(context, request.timeoutMilliseconds, cancellable)
        polkit_authority_check_authorization(
            authority, subject, request.action, details, flags, cancellable,
            { _, result, data in
                let request = Unmanaged<PolkitRequest>.fromOpaque(data!).takeRetainedValue()
                PolkitThread.complete(request, result)
            }, retained)
        g_object_unref(UnsafeMutableRawPointer(subject))
        g_object_unref(UnsafeMutableRawPointer(details))
    }

    /// On the GLib thread: reads the answer.
    private static func complete(_ request: PolkitRequest, _ asyncResult: OpaquePointer?) {
        if let source = request.timeoutSource {
            g_source_destroy(source)
            g_source_unref(source)
        }
        var error: UnsafeMutablePointer<GError>? = nil
        let answer = polkit_authority_check_authorization_finish(request.authority, asyncResult, &error)
        if let cancellable = request.cancellable { g_object_unref(UnsafeMutableRawPointer(cancellable)) }
        guard let answer else {
            let cancelled = error.map { g_error_matches($0, g_io_error_quark(), Int32(G_IO_ERROR_CANCELLED.rawValue)) != 0 } ?? false
            let text = cancelled ? "polkit did not answer in time" : "polkit failed: \(message(of: error))"
            if let error { g_error_free(error) }
            request.finish(.failure(PolkitError(message: text)))
            return
        }
        let result: PolkitAnswer =
            polkit_authorization_result_get_is_authorized(answer) != 0
            ? .yes : polkit_authorization_result_get_is_challenge(answer) != 0 ? .challenge : .no
        g_object_unref(UnsafeMutableRawPointer(answer))
        request.finish(.success(result))
    }
}

/// Cancels `cancellable` after `milliseconds` on `context`; returns the timeout source, which the caller destroys
/// and releases when the check ends first.
private func cancelLater(
    _ context: OpaquePointer, _ milliseconds: UInt32, _ cancellable: UnsafeMutablePointer<GCancellable>?
) -> UnsafeMutablePointer<GSource>? {
    let source = g_timeout_source_new(milliseconds)
    g_object_ref(UnsafeMutableRawPointer(cancellable))
    g_source_set_callback(source, { data in
        g_cancellable_cancel(data?.assumingMemoryBound(to: GCancellable.self))
        return 0
    }, UnsafeMutableRawPointer(cancellable), { data in g_object_unref(data) })
    g_source_attach(source, context)
    return source
}

private func message(of error: UnsafeMutablePointer<GError>?) -> String {
    guard let error, let text = error.pointee.message else { return "unknown error" }
    return String(cString: text)
}
