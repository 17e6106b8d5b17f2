import Glibc
import WhereaboutsCore

/// The daemon's own code pages, handed back to the kernel while no client is served.
///
/// The executable holds the Swift runtime and standard library besides the daemon, and no other process maps it,
/// so every page of its code that the start or a client touched counts as the daemon's private memory: about
/// 5 MiB, as the kernel maps code in 64 KiB around each page touched. Those pages are clean copies of the file.
/// `MADV_DONTNEED` on the executable's read-only, executable mappings takes them out of the daemon's page tables;
/// the file's pages stay in the page cache, which keeps or drops them as it does any file's, and the code the next
/// client runs is mapped back from there by minor faults.
///
/// Only mappings that are neither writable nor written are released: the data and the relocated read-only
/// segments are left alone, as their pages may differ from the file. Nothing is released while a debugger is
/// attached, whose breakpoints live in written copies of code pages.
///
/// Code that runs after the release maps its pages back, so ``IdleMemory`` has the main thread, which has nothing
/// else to do, make the release a moment after the bus thread asked for it and went back to waiting; the mappings
/// are found once, and after the calls only the main thread's wait for the next request runs.
enum ExecutableCode {
    /// Why the pages could not be released.
    struct ReleaseError: Error, CustomStringConvertible {
        var description: String
    }

    /// The executable's code mappings, found by the main thread at its first release (they never change).
    private nonisolated(unsafe) static var mappings: [CodeMapping]?

    /// Releases the resident pages of the executable's code mappings (none under a debugger). Called by the main
    /// thread alone.
    static func release() throws(ReleaseError) {
        guard try !isTraced() else { return }
        if mappings == nil { mappings = try findMappings() }
        for mapping in mappings ?? [] {
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

    /// The executable's private, read-only, executable mappings (`r-xp` in `/proc/self/maps`).
    private static func findMappings() throws(ReleaseError) -> [CodeMapping] {
        let executable = try executablePath()
        return try readProcessFile("/proc/self/maps").split(separator: "\n").compactMap { line in
            // start-end perms offset device inode path
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6, fields[1] == "r-xp", fields[5].drop(while: { $0 == " " }) == executable
            else { return nil }
            let bounds = fields[0].split(separator: "-")
            guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16),
                end > start
            else { return nil }
            return CodeMapping(start: start, length: Int(end - start))
        }
    }

    /// The executable's path as `/proc/self/maps` spells it (with " (deleted)" once the file was replaced).
    private static func executablePath() throws(ReleaseError) -> String {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let length = buffer.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { readlink("/proc/self/exe", $0.baseAddress!, $0.count) }
        }
        guard length > 0 else { throw ReleaseError(description: "/proc/self/exe: \(String(cString: strerror(errno)))") }
        return String(decoding: buffer[..<length], as: UTF8.self)
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

/// The page-aligned bounds of one code mapping.
private struct CodeMapping {
    var start: UInt
    var length: Int
}
