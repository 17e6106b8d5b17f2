import Foundation
import TestSupport
import Testing

/// The Polkit module loads libpolkit-gobject-1 with dlopen and declares what it calls itself; these tests hold
/// those declarations to the installed headers.
@Suite("libpolkit-gobject-1, loaded at the first check")
struct PolkitLoaderTests {
    @Test func theLoadersDeclarationsMatchTheInstalledHeaders() throws {
        let flags = try run("pkg-config", ["--cflags", "polkit-gobject-1"])
        #expect(flags.status == 0, "pkg-config found no polkit-gobject-1: \(flags.output)")
        let include = ProjectPaths.root.appendingPathComponent("Sources/CPolkit/include").path
        let check = ProjectPaths.root.appendingPathComponent("Sources/CPolkit/abi-check.c").path
        let compiled = try run(
            "clang",
            ["-fsyntax-only", "-Werror", "-DWB_POLKIT_ABI_CHECK", "-I", include]
                + flags.output.split(whereSeparator: \.isWhitespace).map(String.init) + [check])
        #expect(compiled.status == 0, "polkit_api.h differs from the installed headers:\n\(compiled.output)")
    }

    @Test func theCheckFailsForADeclarationThatDiffers() throws {
        // The same check against a copy of the header with one parameter type changed must not compile.
        let scratch = try TemporaryDirectory.make(prefix: "whereabouts-abi")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let header = ProjectPaths.root.appendingPathComponent("Sources/CPolkit/include/polkit_api.h")
        let text = try String(contentsOf: header, encoding: .utf8)
        let changed = text.replacingOccurrences(
            of: "GSource *(*_Nonnull g_timeout_source_new)(guint interval);",
            with: "GSource *(*_Nonnull g_timeout_source_new)(gint interval);")
        #expect(changed != text, "the declaration this test changes is gone from polkit_api.h")
        try changed.write(to: scratch.appendingPathComponent("polkit_api.h"), atomically: true, encoding: .utf8)
        let flags = try run("pkg-config", ["--cflags", "polkit-gobject-1"])
        let check = ProjectPaths.root.appendingPathComponent("Sources/CPolkit/abi-check.c").path
        let compiled = try run(
            "clang",
            ["-fsyntax-only", "-DWB_POLKIT_ABI_CHECK", "-I", scratch.path]
                + flags.output.split(whereSeparator: \.isWhitespace).map(String.init) + [check])
        #expect(compiled.status != 0)
        #expect(compiled.output.contains("g_timeout_source_new is declared differently"), "\(compiled.output)")
    }

    private func run(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent(
            "whereabouts-abi-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let process = try ChildProcess(try Executables.find(program), arguments, logFile: log)
        let status = try process.wait(timeout: 60)
        return ((status >> 8) & 0xff, process.log)
    }
}
