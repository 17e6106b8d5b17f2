import CMalloc
import Glibc
import Synchronization
import WhereaboutsCore

/// Memory handed back to the kernel once clients went away, by the main thread, which has nothing else to do.
///
/// The heap: glibc's allocator keeps the pages of freed memory below its top, so after a burst of clients (an app
/// starting thousands, or one user's attack) the daemon would hold its peak for good; `malloc_trim(0)` gives back
/// every free page of every arena. The code: once no client is left, the pages mapped unchanged from the executable
/// and the libraries too (``CleanFilePages``). The bus thread asks (``requestRelease(_:)``) and goes back to
/// waiting; the main thread releases a moment later, so that the code the bus thread runs after asking is not
/// mapped straight back.
enum IdleMemory {
    /// What a release hands back.
    enum Scope {
        /// The heap's free pages.
        case heap
        /// Those and the pages mapped unchanged from files, code above all: no client is left.
        case heapAndCode
    }

    /// Posted by ``requestRelease(_:)``, awaited by ``serveReleases(logger:)``.
    private nonisolated(unsafe) static let requests: UnsafeMutablePointer<sem_t> = {
        let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
        return semaphore
    }()

    /// Set by a request for ``Scope/heapAndCode``, cleared by the release that serves it.
    private static let codeWanted = Atomic<Bool>(false)

    /// How long the main thread waits after a request before releasing, so that the thread that asked is back in
    /// its wait.
    private static let settleMicroseconds: useconds_t = 20_000

    /// Asks the main thread to release what `scope` names; returns at once.
    static func requestRelease(_ scope: Scope) {
        if scope == .heapAndCode { codeWanted.store(true, ordering: .releasing) }
        sem_post(requests)
    }

    /// Serves ``requestRelease(_:)`` on the calling thread, the main thread, for the life of the process. A failure
    /// to release the code is logged once and costs nothing but the memory.
    static func serveReleases(logger: any Logger) -> Never {
        var failed = false
        while true {
            guard sem_wait(requests) == 0 else { continue }
            usleep(settleMicroseconds)
            // The file pages first: finding them reads /proc/self/smaps into the heap, which the trim then gives back.
            if codeWanted.exchange(false, ordering: .acquiring) {
                do {
                    try CleanFilePages.release()
                } catch {
                    if !failed { logger.notice("cannot release the code pages while idle: \(error)") }
                    failed = true
                }
            }
            malloc_trim(0)
        }
    }
}
