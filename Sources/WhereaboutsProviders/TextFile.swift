import Loop
import LoopScheduling
import WhereaboutsCore
import WhereaboutsStorage

#if canImport(Glibc)
    import Glibc
#endif

/// A file that could not be read.
public struct FileReadError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "\(path): \(reason)" }
}

/// Reads a whole text file, refusing files larger than `limit` bytes or that are not valid UTF-8.
///
/// Only a regular file is read (``RegularFile``): a FIFO named as the static location or a track would otherwise
/// block the bus thread until some process wrote to it, and a device may do anything when opened. Links are
/// followed, as these files are the administrator's to place.
public func readTextFile(_ path: String, limit: Int = 64 << 20) throws(FileReadError) -> String {
    let bytes: [UInt8]?
    do {
        bytes = try RegularFile.read(path, limit: limit, followLinks: true)
    } catch {
        throw FileReadError(path: path, reason: error.reason.description)
    }
    guard let bytes else { throw FileReadError(path: path, reason: String(cString: strerror(ENOENT))) }
    guard let text = String(validating: bytes, as: UTF8.self) else {
        throw FileReadError(path: path, reason: "not valid UTF-8 text")
    }
    return text
}

/// Calls back on the loop thread when a file is created, rewritten, replaced, moved or removed.
///
/// It watches the file's folder with inotify, so editors that replace the file by renaming are seen too; the
/// inotify descriptor is watched by the ``DescriptorWatcher`` it is given.
@BusActor
final class FileWatcher {
    private let fd: Int32
    private let watches: any DescriptorWatcher
    private var watch: DescriptorWatch?

    init?(path: String, watches: any DescriptorWatcher, onChange: @escaping @BusActor () -> Void) {
        self.watches = watches
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE)
        guard inotify_add_watch(fd, folder, mask) >= 0 else {
            close(fd)
            return nil
        }
        let descriptor = fd
        watch = watches.watchOnBus(fd, for: .readable) {
            if FileWatcher.drain(descriptor, mentioning: name) { onChange() }
        }
    }

    /// Reads every pending event; true when one names `name`.
    private static func drain(_ fd: Int32, mentioning name: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 8192)
        var mentioned = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return mentioned }
            var offset = 0
            let headerSize = MemoryLayout<inotify_event>.size
            while offset + headerSize <= count {
                let length = buffer.withUnsafeBytes {
                    Int($0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self).len)
                }
                let nameBytes = buffer[(offset + headerSize)..<min(count, offset + headerSize + length)]
                let eventName = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                if eventName == name { mentioned = true }
                offset += headerSize + length
            }
        }
    }

    func cancel() {
        if let watch { watches.cancelWatch(watch) }
        watch = nil
        close(fd)
    }
}
