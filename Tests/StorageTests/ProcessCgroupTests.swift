import Foundation
import Testing
import WhereaboutsStorage

@Suite("Reading a process's cgroups")
struct ProcessCgroupTests {
    @Test func aLiveProcessesCgroupsAreItsProcFileAndItsUserItsEffectiveUser() throws {
        let pid = UInt32(getpid())
        let expected = try String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)
        #expect(ProcessCgroup.read(pid: pid) == .success(ProcessCgroup(cgroup: expected, effectiveUser: geteuid())))
    }

    @Test func aProcessGoneIsSaidToBeGone() throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        let pid = UInt32(child.processIdentifier)
        guard case .failure(let error) = ProcessCgroup.read(pid: pid) else {
            Issue.record("the cgroups of the reaped process \(pid) were read")
            return
        }
        #expect(error.gone && error.description == "process \(pid) is gone")
    }

    @Test func anEmptyFileIsAProcessGoneAndOtherFailuresSayWhy() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("proc-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("7"), withIntermediateDirectories: true)
        // An exiting process's file reads empty.
        try Data().write(to: root.appendingPathComponent("7/cgroup"))
        #expect(ProcessCgroup.read(pid: 7, procRoot: root.path).failureGone == true)
        // No folder: a process gone.
        #expect(ProcessCgroup.read(pid: 9, procRoot: root.path).failureGone == true)
        // A folder where the file should be: not a vanished process, and the reason is said.
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("8/cgroup"), withIntermediateDirectories: true)
        let folder = ProcessCgroup.read(pid: 8, procRoot: root.path)
        #expect(folder.failureGone == false)
        if case .failure(let error) = folder { #expect(error.description.hasPrefix("cannot read /proc/8/cgroup: ")) }
        // Bytes that are not UTF-8 are kept as U+FFFD, which no name believed may hold; the user is the folder's.
        try Data([0x30, 0x3A, 0x3A, 0x2F, 0xFF, 0x0A]).write(to: root.appendingPathComponent("7/cgroup"))
        #expect(
            ProcessCgroup.read(pid: 7, procRoot: root.path)
                == .success(ProcessCgroup(cgroup: "0::/\u{FFFD}\n", effectiveUser: geteuid())))
    }
}

extension Result where Failure == ProcessCgroup.ReadError {
    /// Whether the failure says the process is gone; nil for a success.
    fileprivate var failureGone: Bool? {
        if case .failure(let error) = self { return error.gone }
        return nil
    }
}
