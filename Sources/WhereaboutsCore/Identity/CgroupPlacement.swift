/// Where a process is in one of the hierarchies systemd keeps its units in, as a line of `/proc/PID/cgroup`
/// (`<hierarchy id>:<controllers>:<path>`) gives it: the unified hierarchy's `0::<path>`, or the named v1
/// hierarchy's `<n>:name=systemd:<path>`.
///
/// A cgroup v2 system lists the unified line alone. A hybrid one lists the `name=systemd` line among the v1
/// controllers' lines, in no fixed place, and the unified line where that hierarchy is mounted; systemd puts the
/// process on the same path in both. The other v1 controllers' paths are their own and are not read.
struct CgroupPlacement {
    /// `unified` or `name=systemd`.
    var hierarchy: String
    /// The path's components, root first; never empty.
    var components: [ArraySlice<UInt8>]

    /// The placements that `text`, the content of `/proc/PID/cgroup`, lists, in its order.
    ///
    /// A path of `/` is left out: the hierarchy is mounted but systemd keeps nothing of the process there (on a
    /// legacy system where something else mounted cgroup2, or on a v2 system where a `name=systemd` hierarchy is
    /// mounted for containers). So are lines of any other form; the kernel writes none.
    static func placements(in text: String) -> [CgroupPlacement] {
        var placements: [CgroupPlacement] = []
        for line in Array(text.utf8).split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: ":"), maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, fields[2].first == UInt8(ascii: "/") else { continue }
            let hierarchy: String
            if fields[0].elementsEqual("0".utf8) && fields[1].isEmpty {
                hierarchy = "unified"
            } else if fields[1].split(separator: UInt8(ascii: ",")).contains(where: { $0.elementsEqual(systemd) }) {
                hierarchy = "name=systemd"
            } else {
                continue
            }
            let components = fields[2].split(separator: UInt8(ascii: "/"))
            if !components.isEmpty { placements.append(CgroupPlacement(hierarchy: hierarchy, components: components)) }
        }
        return placements
    }

    private static let systemd = Array("name=systemd".utf8)
}
