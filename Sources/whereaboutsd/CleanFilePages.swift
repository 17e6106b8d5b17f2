import Glibc
import WhereaboutsCore

/// The pages the daemon maps from files unchanged, its code and its libraries' code and read-only data, handed back
/// to the kernel while no client is served.
///
/// The executable holds the Swift runtime and standard library besides the daemon, and no other process maps it,
/// so every page of its code that the start or a client touched counts as the daemon's private memory: about
/// 5 MiB, as the kernel maps code in 64 KiB around each page touched. The libraries' pages count too, wholly where
/// no other process maps them (libstdc++'s symbol tables, which the dynamic loader reads, are 0.6 MiB), and in the
/// daemon's RSS anyway. Those pages are clean copies of the files. `MADV_DONTNEED` takes them out of the daemon's
/// page tables; the files' pages stay in the page cache, which keeps or drops them as it does any file's, and what
/// the next client runs is mapped back from there by minor faults.
///
/// Only read-only mappings (`r-xp`, `r--p`) of files with no page of their own (`Anonymous: 0` in
/// `/proc/self/smaps`) are released: the data, the relocated read-only segments and any code a debugger or a text
/// relocation wrote stay as they are, as their pages differ from the files. A read-only mapping cannot gain such a
/// page later. Nothing is released while a debugger is attached.
///
/// Code that runs after the release maps its pages back, so ``IdleMemory`` has the main thread, which has nothing
/// else to do, make the release a moment after the bus thread asked for it and went back to waiting. The mappings
/// are read afresh at each release: a library loaded when first needed (polkit's) adds its own.
enum CleanFilePages {
    /// Why the pages could not be released.
    struct ReleaseError: Error, CustomStringConvertible {
        var description: String
    }

    /// Releases the resident pages of the read-only file mappings that hold no page of their own (none under a
    /// debugger). Called by the main thread alone.
    static func release() throws(ReleaseError) {
        guard try !isTraced() else { return }
        for mapping in try findMappings() {
            guard madvise(UnsafeMutableRawPointer(bitPattern: mapping.start), mapping.length, MADV_DONTNEED) == 0
            else { throw ReleaseError(description: "madvise: \(String(cString: strerror(errno)))") }
        }
    }

    /// True when `/proc/self/status` names a tracer (`TracerPid:` other than 0).
    private static func isTraced() throws(ReleaseError) -> Bool {
        let status = try readProcessFile("/proc/self/status")
        for line in status.split(separator: "\n") where line.hasPrefix("TracerPid:") {
            return line.dropFirst("TracerPid:".count).drop(while: { $0 == "\t" || $0 == " " }) != "0"
        }
        return false
    }

    /// The private, read-only mappings of files (`r-xp` and `r--p` with a path in `/proc/self/smaps`) whose every
    /// page is the file's (`Anonymous: 0 kB`).
    private static func findMappings() throws(ReleaseError) -> [FileMapping] {
        var found: [FileMapping] = []
        var candidate: FileMapping?
        for line in try readProcessFile("/proc/self/smaps").split(separator: "\n") {
            // A mapping's header: start-end perms offset device inode path; then its figures, one a line.
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            if fields.count >= 5, fields[0].contains("-"), !fields[0].hasSuffix(":") {
                candidate = nil
                let path = fields.count == 6 ? fields[5].drop(while: { $0 == " " }) : ""
                guard fields[1] == "r-xp" || fields[1] == "r--p", path.hasPrefix("/") else { continue }
                let bounds = fields[0].split(separator: "-")
                guard bounds.count == 2, let start = UInt(bounds[0], radix: 16),
                    let end = UInt(bounds[1], radix: 16), end > start
                else { continue }
                candidate = FileMapping(start: start, length: Int(end - start))
            } else if fields.first == "Anonymous:", let mapping = candidate {
                if fields.count >= 2, fields[1] == "0" { found.append(mapping) }
                candidate = nil
            }
        }
        return found
    }

    /// A small file of `/proc/self` (a few KiB), read in pieces of 4 KiB, so that the read leaves the heap as it
    /// was.
    private static func readProcessFile(_ path: String) throws(ReleaseError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ReleaseError(description: "\(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        let failure: Int32? = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 4096) { piece in
            while true {
                let count = read(fd, piece.baseAddress, piece.count)
                if count == 0 { return nil }
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                bytes.append(contentsOf: piece[..<count])
            }
        }
        if let failure { throw ReleaseError(description: "\(path): \(String(cString: strerror(failure)))") }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The page-aligned bounds of one file mapping.
private struct FileMapping {
    var start: UInt
    var length: Int
}
