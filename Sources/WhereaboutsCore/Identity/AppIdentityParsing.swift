/// What the system says about a caller's app, read from the texts it gives: the process's `/proc/PID/cgroup` and
/// the connection's security label. Pure parsing: the reading of files and of the bus is the caller's.
///
/// What each text is worth: a Flatpak app cannot leave the scope Flatpak starts it in, nor name one (it reaches
/// neither the cgroup file system nor the systemd user manager), and a snap's app cannot change its AppArmor label,
/// so a sandboxed caller cannot pass for another app. A process outside any sandbox can start a scope of any name,
/// `app-flatpak-…` included, so the cgroup proves who a sandboxed caller is, not that a caller is sandboxed.
public enum AppIdentityParsing {
    /// The longest application id, in bytes.
    static let maximumApplicationIDLength = 255

    /// True for a valid application id as Flatpak defines it (`flatpak_is_valid_name`), which makes it a valid
    /// D-Bus well-known name too: at most 255 bytes; three or more elements separated by `.`, each non-empty, of
    /// ASCII letters, digits and `_`, not starting with a digit; `-` is allowed too, but only in the last element.
    ///
    /// D-Bus alone takes two elements and `-` anywhere; Flatpak builds and installs nothing under such a name, so a
    /// scope that claims one was not made by Flatpak.
    public static func isValidApplicationID(_ id: String) -> Bool {
        let bytes = id.utf8
        guard !bytes.isEmpty, bytes.count <= maximumApplicationIDLength else { return false }
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard elements.count >= 3 else { return false }
        for (index, element) in elements.enumerated() {
            let dashAllowed = index == elements.count - 1
            guard let first = element.first, !NameBytes.isDigit(first) else { return false }
            for byte in element where !(NameBytes.isAlphanumeric(byte) || byte == UInt8(ascii: "_")) {
                guard dashAllowed && byte == UInt8(ascii: "-") else { return false }
            }
        }
        return true
    }
}
