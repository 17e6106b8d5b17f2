import FuzzSupport
import WhereaboutsCore

/// The texts an app's identity is read from, as `/proc/PID/cgroup` (decoded as the caller decodes it) and as a
/// security label: any bytes give an answer or an error without a crash; a Flatpak app is a valid application id,
/// a hint a desktop file id, a snap's app `<instance>.<app>`; NUL bytes after a label change nothing.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIdentity(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)
    switch Result(catching: { () throws(AppIdentityError) in try AppIdentityParsing.flatpakApp(cgroup: text) }) {
    case .success(let app?):
        precondition(AppIdentityParsing.isValidApplicationID(app), "an invalid Flatpak id: \(app)")
        precondition(AppIdentity.flatpak(app).description == "flatpak:" + app, "a Flatpak identity's description")
    case .success(nil): break
    case .failure(let error): precondition(!error.description.isEmpty, "an error without a description")
    }
    if let hint = AppIdentityParsing.desktopHint(cgroup: text) {
        precondition(
            (1...255).contains(hint.utf8.count) && hint.utf8.first.map(isHintStart) == true
                && hint.utf8.allSatisfy(isHintByte),
            "a hint that is no desktop file id: \(hint)")
    }
    let label = snapApp(bytes)
    if case .success(let app?) = label {
        let parts = app.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        precondition(parts.count == 2 && app.utf8.allSatisfy(isHintByte), "a snap app not <instance>.<app>: \(app)")
    }
    if case .failure(let error) = label { precondition(!error.description.isEmpty, "an error without a description") }
    precondition(snapApp(bytes + [0]) == label, "a NUL after the label changed its reading")
    checkCaller(cgroup: text, label: bytes)
    return 0
}

/// The caller's identity agrees with its parts: the sandbox is the Flatpak app or the snap app (of the label, or
/// of the scope where no label names one), an error when two are there or any is unreadable; only an unconfined caller is the portal; the served app of a sandbox is its
/// own whatever DesktopId says, and only a claim is unverified.
private func checkCaller(cgroup text: String, label bytes: [UInt8]) {
    // nil: the text is unreadable; .some(nil): it names no sandbox.
    let flatpak = readable(Result { () throws(AppIdentityError) in try AppIdentityParsing.flatpakApp(cgroup: text) })
    let snap = readable(snapApp(bytes))
    let scoped = readable(Result { () throws(AppIdentityError) in try AppIdentityParsing.snapScopeApp(cgroup: text) })
    let caller = Result { () throws(AppIdentityError) in
        try AppIdentityParsing.caller(cgroup: text, securityLabel: bytes, uid: 1000)
    }
    guard case .success(let identity) = caller else {
        let unreadable = flatpak == nil || snap == nil || scoped == nil
        let labelled = snap ?? nil
        let inScope = scoped ?? nil
        let twoSnaps = labelled != nil && inScope != nil && labelled != inScope
        let twoSandboxes = (flatpak ?? nil) != nil && (labelled ?? inScope) != nil
        precondition(unreadable || twoSnaps || twoSandboxes, "a caller refused for nothing")
        return
    }
    switch identity.sandbox {
    case .flatpak(let id): precondition(flatpak == .some(id), "a Flatpak app its cgroup does not name")
    case .snap(let app): precondition(snap == .some(app) || scoped == .some(app), "a snap app nothing names")
    case .unconfined:
        precondition(flatpak == .some(nil) && snap == .some(nil) && scoped == .some(nil), "a sandbox taken for none")
    }
    precondition(!identity.isDesktopPortal || identity.sandbox == .unconfined, "a sandboxed portal")
    let served = ClientApp(caller: identity, desktopId: "org.example.Claimed")
    precondition(served != nil, "no app served for a caller that named one")
    precondition(served!.isVerified == (identity.sandbox != .unconfined || identity.isDesktopPortal), "verification")
}

/// The app a reading names, `.some(nil)` for none, or nil when it failed.
private func readable(_ reading: Result<String?, AppIdentityError>) -> String?? {
    switch reading {
    case .success(let app): .some(app)
    case .failure: nil
    }
}

/// What `snapApp` makes of `bytes`.
private func snapApp(_ bytes: [UInt8]) -> Result<String?, AppIdentityError> {
    Result { () throws(AppIdentityError) in try AppIdentityParsing.snapApp(securityLabel: bytes) }
}

/// True for a byte a hint may start with.
private func isHintStart(_ byte: UInt8) -> Bool {
    isHintByte(byte) && byte != UInt8(ascii: ".") && byte != UInt8(ascii: "-")
}

/// True for a byte of a desktop file id: an ASCII letter or digit, `.`, `_` or `-`.
private func isHintByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"):
        true
    default: byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzIdentity) }
    }
#endif
