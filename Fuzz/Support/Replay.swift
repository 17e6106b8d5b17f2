import Glibc

/// A libFuzzer entry point, `LLVMFuzzerTestOneInput`: called with one input's bytes, returns 0.
public typealias FuzzEntryPoint = (UnsafePointer<UInt8>, Int) -> CInt

/// The `main` of a fuzz target built without libFuzzer (see Package.swift): runs `fuzz` once over every input named
/// on the command line, as the libFuzzer build does with `-runs=0`. An argument is a file, which is one input, or a
/// folder, each of whose files is one input (a corpus), in the order of their names.
///
/// Each input is handed over in a buffer of its own size, as libFuzzer does, so that where AddressSanitizer is on, a
/// read past the end is caught. A failed check traps, as under libFuzzer; otherwise the program exits 0 once every
/// input has gone through, 1 when an input cannot be read and 2 when none is named.
public func replayCommandLineInputs(through fuzz: FuzzEntryPoint) -> Never {
    let arguments = CommandLine.arguments.dropFirst()
    guard !arguments.isEmpty else { exitReporting("usage: \(CommandLine.arguments[0]) FILE-OR-FOLDER...", status: 2) }
    var replayed = 0
    for path in arguments {
        for file in inputFiles(at: path) {
            let bytes = contents(of: file)
            let input = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes.count)
            input.initialize(from: bytes, count: bytes.count)
            _ = fuzz(input, bytes.count)
            input.deallocate()
            replayed += 1
        }
    }
    print("\(replayed) input\(replayed == 1 ? "" : "s") replayed")
    exit(0)
}

/// The file at `path`, or the regular files in the folder at `path` sorted by name.
private func inputFiles(at path: String) -> [String] {
    guard isFolder(path) else { return [path] }
    guard let folder = opendir(path) else { exitReporting("\(path): \(String(cString: strerror(errno)))", status: 1) }
    defer { closedir(folder) }
    var files: [String] = []
    while let entry = readdir(folder) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let file = path + "/" + name
        if !isFolder(file) { files.append(file) }
    }
    return files.sorted()
}

private func isFolder(_ path: String) -> Bool {
    var status = stat()
    return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
}

/// The whole content of the file at `path`; exits when it cannot be read.
private func contents(of path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { exitReporting("\(path): \(String(cString: strerror(errno)))", status: 1) }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count == 0 { return bytes }
        if count < 0 {
            if errno == EINTR { continue }
            exitReporting("\(path): \(String(cString: strerror(errno)))", status: 1)
        }
        bytes += chunk[0..<count]
    }
}

/// Writes `message` to standard error and exits with `status`.
private func exitReporting(_ message: String, status: CInt) -> Never {
    let line = Array((message + "\n").utf8)
    _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(status)
}
