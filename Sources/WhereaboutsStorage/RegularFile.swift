#if canImport(Glibc)
    import Glibc
#endif

/// Reads files that must be plain files: the configuration and the service's state files.
///
/// A FIFO, a device, a socket or a directory is refused without being opened for reading (a FIFO would block the
/// reader until some process wrote to it; a device may do anything when opened), and so is a symbolic link unless
/// the caller follows links. The file is opened with `O_NONBLOCK` and `O_NOCTTY` (and `O_NOFOLLOW`), and checked
/// again with `fstat` on the open descriptor, so a file swapped between the check and the open is refused too. A
/// file whose size exceeds the limit is refused before a byte is read, and one that grows past it while being read
/// is refused as well.
public enum RegularFile {
    /// Why a file was refused or could not be read.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// What was wrong.
        public enum Reason: Sendable, Equatable, CustomStringConvertible {
            /// The path holds a NUL byte, where the system would cut it.
            case nulInPath
            /// A symbolic link where links are not followed (dangling or not).
            case symbolicLink
            /// Not a regular file; the kind is named (`a FIFO`, `a directory`, ...).
            case notRegular(String)
            /// Larger than the limit.
            case tooLarge(size: Int, limit: Int)
            /// A symbolic link, followed, whose target does not exist.
            case danglingLink
            /// A system call failed with this `errno`.
            case system(Int32)

            public var description: String {
                switch self {
                case .nulInPath: "the path holds a NUL byte"
                case .symbolicLink: "is a symbolic link, which is not followed"
                case .notRegular(let kind): "is \(kind), not a regular file"
                case .tooLarge(let size, let limit): "is \(size) bytes, more than the limit of \(limit)"
                case .danglingLink: "is a symbolic link to nothing"
                case .system(let code): String(cString: strerror(code))
                }
            }
        }

        /// The file.
        public var path: String
        /// What was wrong.
        public var reason: Reason

        public init(path: String, reason: Reason) {
            self.path = path
            self.reason = reason
        }

        /// `PATH: REASON`.
        public var description: String { "\(path): \(reason)" }
    }

    /// The whole content of the regular file at `path`, at most `limit` bytes, or nil when nothing is there.
    ///
    /// `followLinks` false refuses a symbolic link, even one whose target is missing; true reads the file a link
    /// leads to (for the administrator's configuration, which distributions assemble from links), still refusing
    /// anything but a regular file there, and a link that leads nowhere. A file that vanishes between the check
    /// and the open is refused with the open's error.
    public static func read(_ path: String, limit: Int, followLinks: Bool) throws(Refusal) -> [UInt8]? {
        guard !path.utf8.contains(0) else { throw Refusal(path: path, reason: .nulInPath) }
        var status = stat()
        let found = followLinks ? stat(path, &status) : lstat(path, &status)
        if found != 0 {
            let code = errno
            guard code == ENOENT else { throw Refusal(path: path, reason: .system(code)) }
            if followLinks && lstat(path, &status) == 0 { throw Refusal(path: path, reason: .danglingLink) }
            return nil
        }
        try check(status, path: path, limit: limit)
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (followLinks ? 0 : O_NOFOLLOW)
        let fd = open(path, flags)
        guard fd >= 0 else {
            if errno == ELOOP && !followLinks { throw Refusal(path: path, reason: .symbolicLink) }
            throw Refusal(path: path, reason: .system(errno))
        }
        defer { close(fd) }
        guard fstat(fd, &status) == 0 else { throw Refusal(path: path, reason: .system(errno)) }
        try check(status, path: path, limit: limit)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(status.st_size))
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Refusal(path: path, reason: .system(errno))
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            guard bytes.count <= limit else {
                throw Refusal(path: path, reason: .tooLarge(size: bytes.count, limit: limit))
            }
        }
    }

    /// Refuses anything but a regular file of at most `limit` bytes.
    private static func check(_ status: stat, path: String, limit: Int) throws(Refusal) {
        let type = status.st_mode & S_IFMT
        guard type == S_IFREG else {
            if type == S_IFLNK { throw Refusal(path: path, reason: .symbolicLink) }
            throw Refusal(path: path, reason: .notRegular(kindName(type)))
        }
        guard Int(status.st_size) <= limit else {
            throw Refusal(path: path, reason: .tooLarge(size: Int(status.st_size), limit: limit))
        }
    }

    /// "a FIFO", "a directory" and the like, for the file type bits of `st_mode`.
    private static func kindName(_ type: mode_t) -> String {
        switch type {
        case S_IFIFO: "a FIFO"
        case S_IFDIR: "a directory"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "of an unknown kind"
        }
    }
}
