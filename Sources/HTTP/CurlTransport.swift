import CCurl
import WhereaboutsCore

#if canImport(Glibc)
    import Glibc
#endif

/// ``HTTPTransport`` and ``HTTPDownloader`` through libcurl, which is loaded with `dlopen` at the first request of
/// any transport (a daemon that sends none never loads it, nor the TLS library it links).
///
/// Each transport sends its requests one at a time, in the order given, on a thread of its own that starts with
/// its first request; `post` only queues the request and waits, so it never blocks its caller's thread. At most
/// ``maximumRequestsInFlight`` requests wait or run at once; a request beyond them fails at once. A cancelled task's
/// request is dropped from the queue, or abandoned within about a second if it is being sent, and fails with
/// `HTTPFailure.other("cancelled")`. A request's timeout counts from the call to `post`, its time in the queue
/// included: one that waits in the queue until its timeout has passed fails with ``HTTPFailure/timedOut(_:)``
/// without being sent. (Timeouts longer than 2³¹ seconds are cut to that.)
///
/// Only `http` and `https` URLs are accepted and redirects are not followed (a 3xx comes back as a response). TLS
/// 1.2 or later is required, and the server's certificate and name are always verified, against the system's
/// certificate authorities or only those in `caFile`. Proxies are libcurl's default: the `http_proxy`,
/// `https_proxy` and `no_proxy` variables of the environment, if any.
public final class CurlTransport: HTTPTransport, HTTPDownloader {
    /// How many requests one transport holds at once, the one being sent included.
    public static let maximumRequestsInFlight = 16

    /// Whether a request, of any transport, has loaded libcurl into this process (it is never unloaded).
    public static var isLibraryLoaded: Bool { wb_curl_is_loaded() != 0 }

    /// Makes the first request load `fileName` instead of libcurl's usual file, so tests can see a library that
    /// cannot be loaded; false once libcurl is loaded.
    static func useLibrary(_ fileName: String) -> Bool {
        !fileName.utf8.contains(0) && wb_curl_use_library(fileName) == 0
    }

    /// The `User-Agent` header of every request.
    public let userAgent: String
    /// A PEM file with the only certificate authorities trusted for `https` URLs; nil: the system's.
    public let caFile: String?

    private let worker = CurlWorker(limit: CurlTransport.maximumRequestsInFlight)

    /// A transport sending `userAgent` and trusting the certificate authorities in `caFile` (the system's when nil).
    /// Neither libcurl nor the transport's thread is touched before the first request.
    public init(userAgent: String, caFile: String? = nil) {
        self.userAgent = userAgent
        self.caFile = caFile
    }

    deinit {
        // Every queued request belongs to a `post` still running, which keeps the transport alive: the queue is
        // empty here, and the thread, if there is one, ends.
        worker.close()
    }

    /// GETs `url` on the transport's thread, sending no header but the User-Agent, and returns the response with
    /// its headers, or why there is none; see ``HTTPDownloader/get(_:timeout:maximumResponseBytes:)``. Requests
    /// queue and time out as POSTs do.
    public func get(_ url: String, timeout: Duration, maximumResponseBytes: Int) async -> Result<
        HTTPResponse, HTTPFailure
    > {
        let request = HTTPRequest(
            url: url, body: [], contentType: "", timeout: timeout, maximumResponseBytes: maximumResponseBytes)
        return await send(request, method: .get)
    }

    /// Sends `request` as a POST on the transport's thread and returns the response with any status, or why there
    /// is none; see ``HTTPTransport/post(_:)``. A URL, header or User-Agent holding a line break or another control
    /// character fails without anything being sent.
    public func post(_ request: HTTPRequest) async -> Result<HTTPResponse, HTTPFailure> {
        await send(request, method: .post)
    }

    /// Sends `request` with `method` on the transport's thread.
    private func send(_ request: HTTPRequest, method: CurlJob.Method) async -> Result<HTTPResponse, HTTPFailure> {
        let job: CurlJob
        do {
            job = try CurlJob(request, method: method, userAgent: userAgent, caFile: caFile)
        } catch {
            return .failure(error)
        }
        let worker = self.worker
        // A request waiting behind a slow one fails when its time is up; one being sent, through libcurl's timeout.
        let expiry = Task {
            try? await Task.sleep(until: job.deadline, clock: .continuous)
            if !Task.isCancelled { worker.expire(job) }
        }
        defer { expiry.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                job.continuation = continuation
                worker.submit(job)
            }
        } onCancel: {
            worker.cancel(job)
        }
    }
}

/// One request, its C strings made on the caller's thread, sent on the worker's and answered through its
/// continuation exactly once: by the worker when it has sent it (or found its time up), by ``CurlWorker/submit(_:)``
/// when it refuses it, or by ``CurlWorker/cancel(_:)`` or ``CurlWorker/expire(_:)`` when they drop it from the
/// queue.
final class CurlJob: @unchecked Sendable {
    /// The request's method.
    enum Method {
        /// A POST with the request's body and headers.
        case post
        /// A GET, without them.
        case get
    }

    /// Set before the job is submitted; used once, by whoever finishes the job.
    var continuation: CheckedContinuation<Result<HTTPResponse, HTTPFailure>, Never>?
    /// Guarded by the worker's lock.
    var cancelled = false
    /// Read by libcurl's progress callback while the job is sent; set by ``CurlWorker/cancel(_:)``.
    let abortFlag: UnsafeMutablePointer<Int32>
    /// When the request's timeout, counted from its making, is up.
    let deadline: ContinuousClock.Instant

    private let url: UnsafeMutablePointer<CChar>
    private let userAgent: UnsafeMutablePointer<CChar>
    private let caFile: UnsafeMutablePointer<CChar>?
    private let headerLines: [UnsafeMutablePointer<CChar>]
    private let body: [UInt8]
    private let maximumResponseBytes: Int
    private let method: Method

    init(_ request: HTTPRequest, method: Method, userAgent: String, caFile: String?) throws(HTTPFailure) {
        guard isPrintable(request.url) else { throw .other("the URL holds a control character") }
        guard isPrintable(userAgent, allowingTab: true) else {
            throw .other("the User-Agent holds a control character")
        }
        guard isPrintable(request.contentType, allowingTab: true) else {
            throw .other("the Content-Type holds a control character")
        }
        if let caFile, caFile.isEmpty || caFile.utf8.contains(0) {
            throw .other("the CA file name is empty or holds a NUL")
        }
        var lines = [request.contentType.isEmpty ? "Content-Type:" : "Content-Type: \(request.contentType)"]
        for header in request.headers {
            guard isToken(header.name) else { throw .other("the header name \"\(header.name)\" is not a token") }
            guard isPrintable(header.value, allowingTab: true) else {
                throw .other("the value of the header \(header.name) holds a control character")
            }
            // libcurl removes a header given as "Name:"; "Name;" sends it empty.
            lines.append(header.value.isEmpty ? "\(header.name);" : "\(header.name): \(header.value)")
        }
        var copies: [UnsafeMutablePointer<CChar>] = []
        func copy(_ text: String) throws(HTTPFailure) -> UnsafeMutablePointer<CChar> {
            guard let copied = strdup(text) else {
                copies.forEach { free($0) }
                throw .other("out of memory")
            }
            copies.append(copied)
            return copied
        }
        let url = try copy(request.url)
        let agent = try copy(userAgent)
        let ca: UnsafeMutablePointer<CChar>? = if let caFile { try copy(caFile) } else { nil }
        var headerLines: [UnsafeMutablePointer<CChar>] = []
        for line in lines { headerLines.append(try copy(line)) }
        self.url = url
        self.userAgent = agent
        self.caFile = ca
        self.headerLines = headerLines
        self.body = request.body
        deadline = ContinuousClock.now.advanced(by: min(request.timeout, .seconds(Int64(1) << 31)))
        self.maximumResponseBytes = max(0, request.maximumResponseBytes)
        self.method = method
        abortFlag = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        abortFlag.initialize(to: 0)
    }

    deinit {
        free(url)
        free(userAgent)
        free(caFile)
        headerLines.forEach { free($0) }
        abortFlag.deallocate()
    }

    /// How a request that waited in the queue until its deadline fails.
    static let expired = HTTPFailure.timedOut("the timeout passed before the request could be sent")

    /// Answers the `post` waiting for the job.
    func finish(_ result: Result<HTTPResponse, HTTPFailure>) {
        let waiting = continuation
        continuation = nil
        waiting?.resume(returning: result)
    }

    /// Sends the request, with the time left until its deadline; blocks until libcurl is done with it.
    func perform() -> Result<HTTPResponse, HTTPFailure> {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return .failure(Self.expired) }
        let timeoutMilliseconds = milliseconds(left)
        var message = [CChar](repeating: 0, count: 512)
        var result = wb_http_result(status: 0, body: nil, body_length: 0, headers: nil, headers_length: 0)
        let method = self.method
        let lines = headerLines.map { UnsafePointer($0) }
        let outcome: Int32 = body.withUnsafeBufferPointer { body in
            lines.withUnsafeBufferPointer { lines in
                message.withUnsafeMutableBufferPointer { message in
                    var request = wb_http_request(
                        url: url, body: body.baseAddress, body_length: body.count, headers: lines.baseAddress,
                        header_count: lines.count, user_agent: userAgent, ca_file: caFile,
                        timeout_ms: timeoutMilliseconds, maximum_response_bytes: maximumResponseBytes,
                        abort_flag: UnsafePointer(abortFlag))
                    guard let text = message.baseAddress else { return Int32(WB_HTTP_OTHER.rawValue) }
                    switch method {
                    case .post: return wb_http_post(&request, &result, text, message.count)
                    case .get: return wb_http_get(&request, &result, text, message.count)
                    }
                }
            }
        }
        let why = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        switch UInt32(bitPattern: outcome) {
        case WB_HTTP_RESPONSE.rawValue:
            let received = Array(UnsafeBufferPointer(start: result.body, count: result.body_length))
            let headerBytes = UnsafeRawBufferPointer(start: result.headers, count: result.headers_length)
            let headers = responseHeaders(String(decoding: headerBytes, as: UTF8.self))
            wb_http_result_free(&result)
            return .success(HTTPResponse(status: result.status, body: received, headers: headers))
        case WB_HTTP_UNRESOLVABLE.rawValue: return .failure(.unresolvable(why))
        case WB_HTTP_UNREACHABLE.rawValue: return .failure(.unreachable(why))
        case WB_HTTP_TIMED_OUT.rawValue: return .failure(.timedOut(why))
        case WB_HTTP_TLS.rawValue: return .failure(.tls(why))
        case WB_HTTP_TOO_LARGE.rawValue: return .failure(.tooLarge(maximumResponseBytes))
        case WB_HTTP_UNAVAILABLE.rawValue: return .failure(.unavailable(why))
        case WB_HTTP_ABORTED.rawValue: return .failure(.other("cancelled"))
        default: return .failure(.other(why.isEmpty ? "the transfer failed" : why))
        }
    }
}

/// A transport's thread and its queue: a pthread mutex and condition (which ThreadSanitizer sees, unlike Swift's
/// `Mutex`), which the thread waits on while the queue is empty. The thread starts with the first request, holds a
/// reference to the worker, and ends once the worker is closed and the queue is empty.
final class CurlWorker: @unchecked Sendable {
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let limit: Int
    // Guarded by `lock`.
    private var queue: [CurlJob] = []
    private var current: CurlJob?
    private var closed = false
    private var started = false

    init(limit: Int) {
        self.limit = limit
        pthread_mutex_init(lock, nil)
        pthread_cond_init(wake, nil)
    }

    deinit {
        pthread_cond_destroy(wake)
        pthread_mutex_destroy(lock)
        wake.deallocate()
        lock.deallocate()
    }

    /// Starts the thread; false if it cannot be made.
    private func start() -> Bool {
        var thread = pthread_t()
        let retained = Unmanaged.passRetained(self).toOpaque()
        let made = pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                Unmanaged<CurlWorker>.fromOpaque(argument).takeRetainedValue().run()
                return nil
            }, retained)
        guard made == 0 else {
            Unmanaged<CurlWorker>.fromOpaque(retained).release()
            return false
        }
        pthread_detach(thread)
        return true
    }

    /// Queues `job`, starting the thread if it is the first, or finishes it at once when it is already cancelled,
    /// the queue is full or the thread cannot be started.
    func submit(_ job: CurlJob) {
        let refusal: HTTPFailure? = locked {
            if job.cancelled { return .other("cancelled") }
            if closed { return .other("the transport is gone") }
            if queue.count + (current == nil ? 0 : 1) >= limit { return .other("too many requests in flight") }
            if !started {
                guard start() else { return .other("cannot start the HTTP thread") }
                started = true
            }
            queue.append(job)
            pthread_cond_signal(wake)
            return nil
        }
        if let refusal { job.finish(.failure(refusal)) }
    }

    /// Drops `job` from the queue, if it is still there, and fails it as timed out.
    func expire(_ job: CurlJob) {
        let dropped: Bool = locked {
            guard let index = queue.firstIndex(where: { $0 === job }) else { return false }
            queue.remove(at: index)
            return true
        }
        if dropped { job.finish(.failure(CurlJob.expired)) }
    }

    /// Drops `job` from the queue and finishes it, or has libcurl abandon it if it is being sent.
    func cancel(_ job: CurlJob) {
        let dropped: Bool = locked {
            job.cancelled = true
            if let index = queue.firstIndex(where: { $0 === job }) {
                queue.remove(at: index)
                return true
            }
            if current === job { wb_http_abort(job.abortFlag) }
            return false
        }
        if dropped { job.finish(.failure(.other("cancelled"))) }
    }

    /// Lets the thread end once the queue is empty.
    func close() {
        locked {
            closed = true
            pthread_cond_signal(wake)
        }
    }

    private func run() {
        while let job = next() {
            let result = job.perform()
            locked { current = nil }
            job.finish(result)
        }
    }

    /// Waits for the next job; nil once closed with nothing queued.
    private func next() -> CurlJob? {
        locked {
            while queue.isEmpty && !closed { pthread_cond_wait(wake, lock) }
            guard !queue.isEmpty else { return nil }
            let job = queue.removeFirst()
            current = job
            return job
        }
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return body()
    }
}

/// `duration` in whole milliseconds, rounded up, at least 1.
private func milliseconds(_ duration: Duration) -> Int {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0, attoseconds >= 0 else { return 1 }
    let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
    let fraction = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    guard !overflow, whole <= Int64(Int.max) - fraction else { return Int.max }
    return max(1, Int(whole + fraction))
}

/// The header fields of a response's header lines (`Name: value`, CR LF after each, the status line first), their
/// values without the spaces around them; lines that are not fields are skipped.
func responseHeaders(_ lines: String) -> [HTTPHeader] {
    lines.split(whereSeparator: { $0 == "\r\n" || $0 == "\n" || $0 == "\r" }).dropFirst().compactMap { line in
        guard let colon = line.firstIndex(of: ":") else { return nil }
        let name = String(line[..<colon])
        guard isToken(name) else { return nil }
        let value = line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
        return HTTPHeader(name, String(value.reversed().drop { $0 == " " || $0 == "\t" }.reversed()))
    }
}

/// Whether `text` holds no control character (and no NUL, which would cut its C copy short).
private func isPrintable(_ text: String, allowingTab: Bool = false) -> Bool {
    !text.utf8.contains { $0 == 0x7f || ($0 < 0x20 && !(allowingTab && $0 == 0x09)) }
}

/// Whether `name` is an HTTP token (RFC 9110's `tchar`s), as a header name must be.
private func isToken(_ name: String) -> Bool {
    !name.isEmpty
        && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "A")...UInt8(ascii: "Z"):
                true
            default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
}
