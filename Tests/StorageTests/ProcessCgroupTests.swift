import Foundation
import Testing
import WhereaboutsStorage

@Suite("Reading a process's cgroups")
struct ProcessCgroupTests {
    @Test func aLiveProcessesCgroupsAreItsProcFileAndItsUserItsEffectiveUser() throws {
        let pid = UInt32(getpid())
        let expected = try String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)
        #expect(
            ProcessCgroup.read(pid: pid, connectedAs: geteuid())
                == .success(ProcessCgroup(cgroup: expected, effectiveUser: geteuid())))
    }

    @Test func anotherUsersProcessIsThatUsersWhateverTheBusSaid() throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        child.arguments = ["--reuid=4242", "--regid=4242", "--clear-groups", "/bin/sleep", "30"]
        try child.run()
        defer {
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
        }
        let pid = UInt32(child.processIdentifier)
        // Until setpriv has run sleep, the process is root's, or may not dump core.
        var read = ProcessCgroup.read(pid: pid, connectedAs: 4242)
        for _ in 0..<500 where (try? read.get().effectiveUser) != 4242 {
            usleep(10_000)
            read = ProcessCgroup.read(pid: pid, connectedAs: 4242)
        }
        #expect((try? read.get().effectiveUser) == 4242)
        // The folder's owner does not settle another user's connection: status is read, and names the process's.
        #expect((try? ProcessCgroup.read(pid: pid, connectedAs: 1234).get().effectiveUser) == 4242)
        #expect((try? ProcessCgroup.read(pid: pid, connectedAs: 0).get().effectiveUser) == 4242)
    }

    @Test func theFoldersOwnerSettlesItsOwnUsersConnectionButNotRootsOrAnothers() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("proc-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = root.appendingPathComponent("7")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try "0::/user.slice\n".write(to: folder.appendingPathComponent("cgroup"), atomically: true, encoding: .utf8)
        // No status: where it would be read, the read fails.
        for owner in [UInt32(1000), ProcessCgroup.overflowUser] {
            #expect(chown(folder.path, owner, owner) == 0)
            #expect(
                ProcessCgroup.read(pid: 7, connectedAs: 1000, procRoot: root.path)
                    == .success(ProcessCgroup(cgroup: "0::/user.slice\n", effectiveUser: owner)))
        }
        #expect(chown(folder.path, 1000, 1000) == 0)
        #expect(ProcessCgroup.read(pid: 7, connectedAs: 1001, procRoot: root.path).failedFile == "status")
        // A folder of root's is that of any process that may not dump core (a setuid program): status says whose.
        #expect(chown(folder.path, 0, 0) == 0)
        #expect(ProcessCgroup.read(pid: 7, connectedAs: 0, procRoot: root.path).failedFile == "status")
        try "Name:\tapp\nUid:\t0\t1000\t0\t0\n".write(
            to: folder.appendingPathComponent("status"), atomically: true, encoding: .utf8)
        #expect(
            ProcessCgroup.read(pid: 7, connectedAs: 0, procRoot: root.path)
                == .success(ProcessCgroup(cgroup: "0::/user.slice\n", effectiveUser: 1000)))
    }

    @Test func aProcessGoneIsSaidToBeGone() throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        let pid = UInt32(child.processIdentifier)
        guard case .failure(let error) = ProcessCgroup.read(pid: pid, connectedAs: 1000) else {
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
        try "Name:\tapp\nUid:\t1000\t1001\t1000\t1000\n".write(
            to: root.appendingPathComponent("7/status"), atomically: true, encoding: .utf8)
        // An exiting process's file reads empty.
        try Data().write(to: root.appendingPathComponent("7/cgroup"))
        #expect(ProcessCgroup.read(pid: 7, connectedAs: 1001, procRoot: root.path).failureGone == true)
        // A folder where the file should be: not a vanished process, and the reason is said.
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("8/cgroup"), withIntermediateDirectories: true)
        let folder = ProcessCgroup.read(pid: 8, connectedAs: 1001, procRoot: root.path)
        #expect(folder.failureGone == false)
        if case .failure(let error) = folder { #expect(error.description.hasPrefix("cannot read /proc/8/cgroup: ")) }
        // Bytes that are not UTF-8 are kept as U+FFFD, which no name believed may hold.
        try Data([0x30, 0x3A, 0x3A, 0x2F, 0xFF, 0x0A]).write(to: root.appendingPathComponent("7/cgroup"))
        #expect(
            ProcessCgroup.read(pid: 7, connectedAs: 1001, procRoot: root.path)
                == .success(ProcessCgroup(cgroup: "0::/\u{FFFD}\n", effectiveUser: 1001)))
        // A status without its Uid line does not read as the kernel writes it.
        try "Name:\tapp\n".write(to: root.appendingPathComponent("7/status"), atomically: true, encoding: .utf8)
        let noUser = ProcessCgroup.read(pid: 7, connectedAs: 1001, procRoot: root.path)
        #expect(noUser.failureGone == false)
        if case .failure(let error) = noUser {
            #expect(error.description == "/proc/7/status does not read as the kernel writes it")
        }
    }
}

extension Result where Failure == ProcessCgroup.ReadError {
    /// Whether the failure says the process is gone; nil for a success.
    fileprivate var failureGone: Bool? {
        if case .failure(let error) = self { return error.gone }
        return nil
    }

    /// The file whose read failed; nil for a success.
    fileprivate var failedFile: String? {
        if case .failure(let error) = self { return error.file }
        return nil
    }
}
