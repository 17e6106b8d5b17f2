extension AppIdentityParsing {
    /// The app of a snap that a connection belongs to, as `<instance>.<app>` (see ``AppIdentity/snap(_:)``), from
    /// its security label: the `LinuxSecurityLabel` of `GetConnectionCredentials`, which on AppArmor is the peer's
    /// label and mode, possibly followed by NUL bytes (`snap.firefox.firefox (enforce)`). `nil` for a label that is
    /// not in snapd's namespace: none at all (empty), `unconfined`, a profile of the host's own
    /// (`/usr/bin/evince (enforce)`), or one of snapd's helpers (`snap-update-ns.foo (enforce)`, `snap-confine`).
    ///
    /// snapd labels an app `snap.<instance>.<app>`: the instance is the snap's name (2 to 40 of `a-z`, `0-9` and
    /// `-`, with a letter, no `-` at either end nor two together), then for a parallel install `_` and a key (1 to
    /// 10 of `a-z0-9`); the app's name is letters and digits, single `-` between them. Any mode is taken: a snap
    /// installed with `--devmode` runs in `complain`, yet its label is still the kernel's.
    ///
    /// - Throws: ``AppIdentityError`` for a label in snapd's namespace that is not an app's: a hook's
    ///   (`snap.<instance>.hook.<hook>`, and a component's `snap.<instance>+<component>.hook.<hook>`) is confined
    ///   by its snap but is no app, and must not be taken for an unconfined caller, whose DesktopId would be
    ///   believed; any other form is not snapd's. Also for a label with a NUL before its end.
    public static func snapApp(securityLabel bytes: [UInt8]) throws(AppIdentityError) -> String? {
        var label = bytes[...]
        while label.last == 0 { label = label.dropLast() }
        guard !label.contains(0) else { throw AppIdentityError(.nulInLabel) }
        guard label.starts(with: "snap.".utf8) else { return nil }
        let invalid = AppIdentityError(.invalidSnapLabel(String(decoding: label, as: UTF8.self)))
        let tag = try securityTag(of: label, invalid: invalid)
        let parts = tag.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        if parts.count == 3, isSnapInstance(parts[1]), isSnapAppName(parts[2]) {
            return String(decoding: tag.dropFirst(5), as: UTF8.self)
        }
        if parts.count == 4, parts[2].elementsEqual("hook".utf8), isHookName(parts[3]) {
            let plus = parts[1].firstIndex(of: UInt8(ascii: "+")) ?? parts[1].endIndex
            let component = parts[1][plus...].dropFirst()
            if isSnapInstance(parts[1][..<plus]) && (plus == parts[1].endIndex || isSnapAppName(component)) {
                throw AppIdentityError(.snapHook(label: String(decoding: label, as: UTF8.self)))
            }
        }
        throw invalid
    }

    /// The label without its mode, ` (<mode>)`, the mode being lower-case letters; the label alone when it has
    /// none.
    private static func securityTag(
        of label: ArraySlice<UInt8>, invalid: AppIdentityError
    ) throws(AppIdentityError) -> ArraySlice<UInt8> {
        guard label.last == UInt8(ascii: ")") else { return label }
        guard let open = label.lastIndex(of: UInt8(ascii: "(")), open > label.startIndex,
            label[label.index(before: open)] == UInt8(ascii: " ")
        else { throw invalid }
        let mode = label[label.index(after: open)..<label.index(before: label.endIndex)]
        guard !mode.isEmpty, mode.allSatisfy(NameBytes.isLowercase) else { throw invalid }
        return label[..<label.index(before: open)]
    }

    /// True for a snap's instance name: its name, then `_` and an instance key for a parallel install.
    private static func isSnapInstance(_ instance: ArraySlice<UInt8>) -> Bool {
        guard let underscore = instance.firstIndex(of: UInt8(ascii: "_")) else { return isSnapName(instance) }
        let key = instance[instance.index(after: underscore)...]
        return isSnapName(instance[..<underscore]) && (1...10).contains(key.count)
            && key.allSatisfy { NameBytes.isLowercase($0) || NameBytes.isDigit($0) }
    }

    /// True for a snap's name: 2 to 40 of `a-z`, `0-9` and `-`, at least one letter, no `-` at either end nor
    /// two together.
    private static func isSnapName(_ name: ArraySlice<UInt8>) -> Bool {
        guard (2...40).contains(name.count), name.contains(where: NameBytes.isLowercase) else { return false }
        return isDashed(name) { NameBytes.isLowercase($0) || NameBytes.isDigit($0) }
    }

    /// True for the name of a snap's app: letters and digits, a single `-` between two of them.
    private static func isSnapAppName(_ name: ArraySlice<UInt8>) -> Bool {
        isDashed(name, NameBytes.isAlphanumeric)
    }

    /// True for the name of a snap's hook: a lower-case letter, then lower-case letters and digits, a single `-`
    /// between two of them.
    private static func isHookName(_ name: ArraySlice<UInt8>) -> Bool {
        guard let first = name.first, NameBytes.isLowercase(first) else { return false }
        return isDashed(name) { NameBytes.isLowercase($0) || NameBytes.isDigit($0) }
    }

    /// True when `name` is runs of bytes `isPart` accepts, joined by single `-`.
    private static func isDashed(_ name: ArraySlice<UInt8>, _ isPart: (UInt8) -> Bool) -> Bool {
        let runs = name.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        return runs.allSatisfy { !$0.isEmpty && $0.allSatisfy(isPart) }
    }
}
