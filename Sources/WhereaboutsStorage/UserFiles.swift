#if canImport(Glibc)
    import Glibc
#endif

/// The folders of per-user state files (`regions.d`, `history.d`), each file named by its user's id.
enum UserFiles {
    /// The users whose files are in `folder`, sorted: names that are a user id. A user's temporary file, left by a
    /// crash in the middle of a write, is removed; nothing else there is read.
    static func users(in folder: String) -> [UInt32] {
        guard let directory = opendir(folder) else { return [] }
        defer { closedir(directory) }
        var users: [UInt32] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasSuffix(".tmp"), userID(name.dropLast(4)) != nil {
                unlink("\(folder)/\(name)")
                continue
            }
            if let user = userID(name[...]) { users.append(user) }
        }
        return users.sorted()
    }

    /// The user id `name` spells in decimal, without leading zeros; nil for anything else.
    private static func userID(_ name: Substring) -> UInt32? {
        guard !name.isEmpty, name.utf8.allSatisfy({ (48...57).contains($0) }), name.count <= 10,
            name == "0" || !name.hasPrefix("0")
        else { return nil }
        return UInt32(name)
    }
}
