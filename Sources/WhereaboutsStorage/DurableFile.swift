import WhereaboutsCore

#if canImport(Glibc)
    import Glibc
#endif

/// A file written so that a crash at any moment leaves either the old or the new content, never a mix.
///
/// `write` puts the text in `NAME.tmp`, flushes it to disk, renames it over `NAME` and flushes the folder, so
/// once `write` returns the new content survives a power cut. `load` reads only a regular file, never through a
/// symbolic link, and moves anything unusable aside.
public struct DurableFile: Sendable {
    /// The file's path.
    public let path: String
    /// Where an unusable file is moved, as `ASIDE.corrupt-SECONDS`: beside itself by default.
    private let aside: String

    /// The file at `path`, an unusable one moved to `aside` (by default `path`) with `.corrupt-SECONDS` added.
    public init(path: String, aside: String? = nil) {
        self.path = path
        self.aside = aside ?? path
    }

    /// The file called `name` in the folder of the file at `neighbour`.
    public init(named name: String, besideFileAt neighbour: String) {
        let folder = neighbour.lastIndex(of: "/").map { String(neighbour[...$0]) } ?? ""
        self.init(path: folder + name)
    }

    /// Why reading or writing failed.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var operation: String
        public var path: String
        public var code: Int32
        public var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
    }

    /// Replaces the file's content with `text`, durably; the file is readable by its owner only.
    ///
    /// The temporary file is made with `O_CREAT | O_EXCL | O_NOFOLLOW`, so nothing already at `NAME.tmp` (a file
    /// left by a crash, a FIFO, a symbolic link to another file) is ever written through: it is removed (a link
    /// itself, not its target) and the file made afresh, and when that fails too the write fails.
    public func write(_ text: String) throws(Failure) {
        let temporary = path + ".tmp"
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
        var fd = open(temporary, flags, 0o600)
        if fd < 0 && errno == EEXIST && unlink(temporary) == 0 { fd = open(temporary, flags, 0o600) }
        guard fd >= 0 else { throw Failure(operation: "create", path: temporary, code: errno) }
        if let code = Self.writeAll(text, to: fd) {
            close(fd)
            unlink(temporary)
            throw Failure(operation: "write", path: temporary, code: code)
        }
        if fsync(fd) != 0 {
            let code = errno
            close(fd)
            unlink(temporary)
            throw Failure(operation: "fsync", path: temporary, code: code)
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw Failure(operation: "rename", path: temporary, code: code)
        }
        Self.syncFolder(of: path)
    }

    /// Appends `text` to the file and flushes it to disk (a user's history, which grows by lines). Nothing but an
    /// existing regular file is written: no link is followed, nothing is made, and a FIFO or device is refused once
    /// opened, without blocking.
    public func append(_ text: String) throws(Failure) {
        let fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(operation: "open", path: path, code: errno) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw Failure(operation: "stat", path: path, code: errno) }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw Failure(operation: "append to", path: path, code: EINVAL)
        }
        if let code = Self.writeAll(text, to: fd) { throw Failure(operation: "write", path: path, code: code) }
        guard fsync(fd) == 0 else { throw Failure(operation: "fsync", path: path, code: errno) }
    }

    /// Writes all of `text` to `fd`, again after an interruption; the error number of a failure, nil when written.
    private static func writeAll(_ text: String, to fd: Int32) -> Int32? {
        var bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                return errno
            }
            written += count
        }
        return nil
    }

    /// The state the file holds, for the service's state files: `missing` when there is no file; `parse`'s value
    /// for its text; otherwise `unusable`, with a line to `log` (`LABEL: PROBLEM; moved it to PATH; FALLBACK`).
    ///
    /// Only a regular file of at most `limit` bytes is read, and a symbolic link is not followed
    /// (``RegularFile``). Anything else there (a link, dangling or not, a FIFO, a directory, a device, a file too
    /// large or that cannot be read), like a text that is not UTF-8 or that `parse` refuses, is moved aside, so
    /// that the next save starts afresh rather than silently replacing it; when it cannot be moved, the line says
    /// so and `unmoved` is called.
    public func load<Value>(
        limit: Int, now: WallTime, label: String, fallback: String, missing: Value, unusable: Value,
        log: (String) -> Void, unmoved: () -> Void = {}, parse: (String) -> Result<Value, LoadProblem>
    ) -> Value {
        let problem: String
        do throws(RegularFile.Refusal) {
            guard let bytes = try RegularFile.read(path, limit: limit, followLinks: false) else { return missing }
            switch String(validating: bytes, as: UTF8.self).map(parse) {
            case .success(let value)?: return value
            case .failure(let refusal)?: problem = refusal.description
            case nil: problem = "\(path): not UTF-8 text"
            }
        } catch {
            problem = error.description
        }
        do {
            let aside = try moveAside(now: now)
            log("\(label): \(problem); moved it to \(aside); \(fallback)")
        } catch {
            log("\(label): \(problem); cannot move it aside (\(error)); \(fallback)")
            unmoved()
        }
        return unusable
    }

    /// Why a state file's text was refused.
    public struct LoadProblem: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// Moves the file aside as `NAME.corrupt-SECONDS` (or the `aside` given) and returns the new path.
    public func moveAside(now: WallTime) throws(Failure) -> String {
        let target = "\(aside).corrupt-\(now.seconds)"
        guard rename(path, target) == 0 else { throw Failure(operation: "rename", path: path, code: errno) }
        Self.syncFolder(of: path)
        if aside != path { Self.syncFolder(of: target) }
        return target
    }

    /// Removes the file, durably: once it returns, the file does not come back after a power cut. A file already
    /// gone is no failure.
    public func remove() throws(Failure) {
        guard unlink(path) == 0 || errno == ENOENT else { throw Failure(operation: "remove", path: path, code: errno) }
        Self.syncFolder(of: path)
    }

    private static func syncFolder(of path: String) {
        let folder = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}
