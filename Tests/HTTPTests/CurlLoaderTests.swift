import Foundation
import TestSupport
import Testing
import WhereaboutsCore

@testable import HTTP

/// The HTTP module loads libcurl with dlopen at the first request and declares what it calls itself; these tests
/// hold those declarations to the installed header and check when the library is loaded.
@Suite("libcurl, loaded at the first request", .timeLimit(.minutes(2)))
struct CurlLoaderTests {
    static let directory = ProjectPaths.root.appendingPathComponent("Sources/CCurl")

    @Test func theLoadersDeclarationsMatchTheInstalledHeader() throws {
        let compiled = try compile(
            Self.directory.appendingPathComponent("abi-check.c").path,
            include: Self.directory.appendingPathComponent("include").path)
        #expect(compiled.status == 0, "curl_library.h differs from the installed <curl/curl.h>:\n\(compiled.output)")
    }

    @Test(arguments: [
        (
            "wb_curl_code (*curl_easy_perform)(void *curl);", "wb_curl_code (*curl_easy_perform)(const char *curl);",
            "curl_easy_perform is declared differently"
        ),
        (
            "wb_curl_code (*curl_easy_setopt)(void *curl, wb_curl_option option, ...);",
            "wb_curl_code (*curl_easy_setopt)(void *curl, int option, ...);", "curl_easy_setopt is declared differently"
        ),
        (
            "#define WB_CURLOPT_TIMEOUT_MS 155U", "#define WB_CURLOPT_TIMEOUT_MS 156U",
            "WB_CURLOPT_TIMEOUT_MS differs from CURLOPT_TIMEOUT_MS"
        ),
        (
            "#define WB_CURLE_OPERATION_TIMEDOUT 28U", "#define WB_CURLE_OPERATION_TIMEDOUT 27U",
            "WB_CURLE_OPERATION_TIMEDOUT differs from CURLE_OPERATION_TIMEDOUT"
        ),
        ("typedef int64_t wb_curl_off_t;", "typedef int32_t wb_curl_off_t;", "curl_off_t's type differs"),
    ])
    func theCheckFailsForADeclarationThatDiffers(original: String, changed: String, complaint: String) throws {
        // The same check against a copy of the header with one declaration changed must not compile.
        let scratch = try TemporaryDirectory.make(prefix: "whereabouts-curl-abi")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let text = try String(
            contentsOf: Self.directory.appendingPathComponent("curl_library.h"), encoding: .utf8)
        let edited = text.replacingOccurrences(of: original, with: changed)
        #expect(edited != text, "the declaration this test changes is gone from curl_library.h: \(original)")
        try edited.write(to: scratch.appendingPathComponent("curl_library.h"), atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(
            at: Self.directory.appendingPathComponent("abi-check.c"), to: scratch.appendingPathComponent("abi-check.c"))
        let compiled = try compile(
            scratch.appendingPathComponent("abi-check.c").path,
            include: Self.directory.appendingPathComponent("include").path)
        #expect(compiled.status != 0)
        #expect(compiled.output.contains(complaint), "\(compiled.output)")
    }

    @Test func libcurlIsLoadedByTheFirstRequestAndNotBefore() async throws {
        // In a process of its own, which nothing has loaded libcurl into; it reports what it saw on its standard
        // output, one "step: loaded mapped" line each.
        let child = try #require(
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                func report(_ step: String) {
                    print("\(step): \(CurlTransport.isLibraryLoaded) \(libcurlIsMapped())")
                }
                report("start")
                let transport = CurlTransport(userAgent: "whereabouts-tests/1")
                report("made")
                let port = try ReservedPort()
                defer { port.close() }
                let result = await transport.post(
                    HTTPRequest(url: "http://127.0.0.1:\(port.number)/v1/geolocate", body: []))
                report("posted")
                print("result: \(failureKind(result) ?? "response")")
            })
        let lines = String(decoding: child.standardOutputContent, as: UTF8.self).split(separator: "\n")
        #expect(lines.contains("start: false false"), "libcurl was loaded at start: \(lines)")
        #expect(lines.contains("made: false false"), "making a transport loaded libcurl: \(lines)")
        #expect(lines.contains("posted: true true"), "the first request did not load libcurl: \(lines)")
        #expect(lines.contains("result: unreachable"), "\(lines)")
    }

    @Test func aLibraryThatCannotBeLoadedMakesRequestsUnavailableUntilOneCan() async throws {
        let child = try #require(
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let transport = CurlTransport(userAgent: "whereabouts-tests/1")
                let port = try ReservedPort()
                defer { port.close() }
                let request = HTTPRequest(url: "http://127.0.0.1:\(port.number)/v1/geolocate", body: [])
                // A file that is not there, then a library without libcurl's functions, then libcurl.
                for library in ["libcurl-not-installed.so.4", "libc.so.6", "libcurl.so.4"] {
                    print("use \(library): \(CurlTransport.useLibrary(library))")
                    print("\(library): \(await transport.post(request)) loaded: \(CurlTransport.isLibraryLoaded)")
                }
                print("use again: \(CurlTransport.useLibrary("libc.so.6"))")
            })
        let lines = String(decoding: child.standardOutputContent, as: UTF8.self).split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("use lib") }.allSatisfy { $0.hasSuffix(": true") }, "\(lines)")
        #expect(
            lines.contains {
                $0.hasPrefix(
                    "libcurl-not-installed.so.4: failure(no HTTP library: libcurl-not-installed.so.4: cannot open")
                    && $0.hasSuffix("loaded: false")
            }, "\(lines)")
        #expect(
            lines.contains {
                $0.hasPrefix("libc.so.6: failure(no HTTP library: libc.so.6: ") && $0.contains("curl_global_init")
                    && $0.hasSuffix("loaded: false")
            }, "\(lines)")
        #expect(
            lines.contains { $0.hasPrefix("libcurl.so.4: failure(cannot connect: ") && $0.hasSuffix("loaded: true") },
            "\(lines)")
        #expect(lines.contains("use again: false"), "the library cannot change once loaded: \(lines)")
    }

    @Test func eachTransportHasAThreadThatEndsWithIt() async throws {
        let child = try #require(
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let port = try ReservedPort()
                defer { port.close() }
                let request = HTTPRequest(url: "http://127.0.0.1:\(port.number)/v1/geolocate", body: [])
                _ = await CurlTransport(userAgent: "whereabouts-tests/1").post(request)
                try await Task.sleep(for: .milliseconds(200))
                var transports = (0..<8).map { _ in CurlTransport(userAgent: "whereabouts-tests/1") }
                let before = threadCount()
                for transport in transports { _ = await transport.post(request) }
                let alive = threadCount()
                transports.removeAll()
                var after = threadCount()
                let deadline = ContinuousClock.now + .seconds(10)
                while after > alive - 8 && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                    after = threadCount()
                }
                print("threads: \(before) \(alive) \(after)")
            })
        let report = String(decoding: child.standardOutputContent, as: UTF8.self)
        let counts =
            report.split(separator: "\n").first { $0.hasPrefix("threads: ") }?
            .dropFirst("threads: ".count).split(separator: " ").compactMap { Int($0) } ?? []
        try #require(counts.count == 3, "\(report)")
        #expect(counts[1] >= counts[0] + 8, "a thread for each transport's first request: \(report)")
        #expect(counts[2] <= counts[1] - 8, "the threads end with their transports: \(report)")
    }

    private func compile(_ source: String, include: String) throws -> (status: Int32, output: String) {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent(
            "whereabouts-curl-abi-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let process = try ChildProcess(
            try Executables.find("cc"),
            ["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-DWB_CURL_ABI_CHECK", "-I", include, source],
            logFile: log)
        let status = try process.wait(timeout: 60)
        return ((status >> 8) & 0xff, process.log)
    }
}

/// Whether the process has libcurl (the OpenSSL flavour the module loads) mapped.
func libcurlIsMapped() -> Bool {
    // /proc files have no size: read until the end, not the size stat gives.
    guard let file = FileHandle(forReadingAtPath: "/proc/self/maps"), let maps = try? file.readToEnd() else {
        return false
    }
    try? file.close()
    return String(decoding: maps, as: UTF8.self).contains("/libcurl.so.4")
}

/// The number of threads of the process.
func threadCount() -> Int {
    guard let file = FileHandle(forReadingAtPath: "/proc/self/status"), let status = try? file.readToEnd() else {
        return -1
    }
    try? file.close()
    let line = String(decoding: status, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("Threads:") }
    return line.flatMap { Int($0.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) } ?? -1
}
