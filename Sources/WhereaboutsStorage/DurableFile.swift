import WhereaboutsCore

#if canImport(Glibc)
    import Glibc
#endif

/// A file written so that a crash at any moment leaves either the old or the new content, never a mix.
///
/// `write` puts the text in `NAME.tmp`, flushes it to disk, renames it over `NAME` and flushes the folder, so
/// once `write` returns the new content survives a power cut.
public struct DurableFile: Sendable {
    /// The file's path.
    public let path: String

    public init(path: String) { self.path = path }

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

    /// The file's text, or nil when it does not exist.
    public func read(limit: Int = 16 << 20) throws(Failure) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw Failure(operation: "open", path: path, code: errno)
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(operation: "read", path: path, code: errno)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > limit { throw Failure(operation: "read", path: path, code: EFBIG) }
        }
    }

    /// Replaces the file's content with `text`, durably; the file is readable by its owner only.
    public func write(_ text: String) throws(Failure) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(operation: "create", path: temporary, code: errno) }
        var bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                let code = errno
                close(fd)
                unlink(temporary)
                throw Failure(operation: "write", path: temporary, code: code)
            }
            written += count
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
        syncFolder()
    }

    /// The state the file holds, for the service's state files: `missing` when there is no file; `parse`'s value
    /// for its text; otherwise `unusable`, with a line to `log` (`LABEL: PROBLEM; FALLBACK`), and a file that
    /// `parse` refuses (or that is not UTF-8) moved aside, so that the next save starts afresh.
    public func load<Value>(
        limit: Int = 16 << 20, now: WallTime, label: String, fallback: String, missing: Value, unusable: Value,
        log: (String) -> Void, parse: (String) -> Result<Value, LoadProblem>
    ) -> Value {
        let bytes: [UInt8]
        do {
            guard let read = try read(limit: limit) else { return missing }
            bytes = read
        } catch {
            log("\(label): cannot read: \(error); \(fallback)")
            return unusable
        }
        let problem: String
        switch String(validating: bytes, as: UTF8.self).map(parse) {
        case .success(let value)?: return value
        case .failure(let refusal)?: problem = refusal.description
        case nil: problem = "\(path): not UTF-8 text"
        }
        let aside = (try? moveAside(now: now)) ?? "(could not be moved)"
        log("\(label): \(problem); moved it to \(aside); \(fallback)")
        return unusable
    }

    /// Why a state file's text was refused.
    public struct LoadProblem: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// Moves the file aside as `NAME.corrupt-SECONDS` and returns the new path.
    public func moveAside(now: WallTime) throws(Failure) -> String {
        let target = "\(path).corrupt-\(now.seconds)"
        guard rename(path, target) == 0 else { throw Failure(operation: "rename", path: path, code: errno) }
        syncFolder()
        return target
    }

    private func syncFolder() {
        let folder = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}

/// The users' stored decisions, loaded from and saved to a ``DurableFile``.
///
/// A corrupt file is moved aside and the store starts empty, failing closed: every app is then `notDetermined`
/// until asked again, and nothing is granted that was not.
public struct GrantFile: Sendable {
    public let file: DurableFile

    public init(path: String) { file = DurableFile(path: path) }

    /// The stored decisions; `log` receives a line when the file was corrupt or unreadable.
    public func load(now: WallTime, log: (String) -> Void) -> GrantStore {
        file.load(
            now: now, label: "grants", fallback: "starting with no stored decisions", missing: GrantStore(),
            unusable: GrantStore(), log: log
        ) { text in
            Result { () throws(GrantStoreError) in try GrantStore.parse(text, file: file.path) }
                .mapError { DurableFile.LoadProblem($0.description) }
        }
    }

    /// Saves `store` durably.
    public func save(_ store: GrantStore) throws(DurableFile.Failure) { try file.write(store.text) }
}
