import Loop

/// Exported objects, and the tree of nodes that leads to them.
extension Connection {
    /// Serves `object` at `path`, replacing any object there. With `owner` (a unique bus name), introspection
    /// shows the object, and the nodes on the way to it, to that connection alone.
    public func export(_ object: any ExportedObject, at path: ObjectPath, visibleTo owner: String? = nil) {
        if objects[path] != nil { unexport(path) }
        objects[path] = object
        if let owner { owners[path] = owner }
        index(path, owner: owner)
    }

    /// Stops serving the object at `path`.
    public func unexport(_ path: ObjectPath) {
        guard objects.removeValue(forKey: path) != nil else { return }
        unindex(path, owner: owners.removeValue(forKey: path))
    }

    /// Serves the objects of `subtree` at every path below `path` that no object exported on its own takes; the
    /// subtree says which connection sees each, in introspection and on the way to it.
    public func exportSubtree(_ subtree: any ExportedSubtree, at path: ObjectPath) {
        subtrees[path] = subtree
    }

    /// Stops serving the objects below `path`.
    public func unexportSubtree(at path: ObjectPath) {
        subtrees[path] = nil
    }

    private func index(_ path: ObjectPath, owner: String?) {
        var below = path.rawValue[...]
        while let (node, child) = Self.parentAndChild(of: below) {
            let wasEmpty = nodes[node]?.isEmpty(for: owner) ?? true
            nodes[node, default: ChildNodes()].add(child, owner: owner)
            // A node counts once in its parent for as long as it has anything below it, so only the nodes that
            // gain their first entry are walked up from: an object beside others touches one node.
            guard wasEmpty else { return }
            below = node[...]
        }
    }

    private func unindex(_ path: ObjectPath, owner: String?) {
        var below = path.rawValue[...]
        while let (node, child) = Self.parentAndChild(of: below) {
            // In place: a copy of a node with thousands of children would make every removal cost them all.
            guard nodes[node]?.remove(child, owner: owner) == true else { return }
            let nowEmpty = nodes[node]?.isEmpty(for: owner) ?? true
            if nodes[node]?.isEmpty == true { nodes[node] = nil }
            guard nowEmpty else { return }
            below = node[...]
        }
    }

    /// The node above `path` and the name of `path` in it; nil for the root.
    private static func parentAndChild(of path: Substring) -> (node: String, child: Substring)? {
        guard path.utf8.count > 1, let slash = path.lastIndex(of: "/") else { return nil }
        let node = slash == path.startIndex ? "/" : String(path[..<slash])
        return (node, path[path.index(after: slash)...])
    }

    /// The object served at `path`, exported there or by a subtree above it.
    public func object(at path: ObjectPath) -> (any ExportedObject)? { served(at: path)?.object }

    /// The object at `path` and the connection it is shown to, if only one.
    func served(at path: ObjectPath) -> (object: any ExportedObject, owner: String?)? {
        if let object = objects[path] { return (object, owners[path]) }
        for (root, subtree) in subtrees {
            if let relative = Self.relative(path.rawValue, below: root.rawValue) { return subtree.object(at: relative) }
        }
        return nil
    }

    /// The part of `path` below `root`, without the slash between them; nil unless `path` lies strictly below it.
    private static func relative(_ path: String, below root: String) -> Substring? {
        let rootLength = root == "/" ? 0 : root.utf8.count
        guard path.utf8.count > rootLength + 1, path.utf8.starts(with: root.utf8) || rootLength == 0 else { return nil }
        let slash = path.utf8.index(path.startIndex, offsetBy: rootLength)
        guard path.utf8[slash] == UInt8(ascii: "/") else { return nil }
        return path[path.utf8.index(after: slash)...]
    }

    /// The names of the nodes directly below `path` that lead to objects `sender` may see (with `view`), in numeric
    /// order where they are numbers; for ``IntrospectionView/own`` the work is in what `sender` may see, not in what
    /// is exported.
    func childNodes(of path: ObjectPath, visibleTo sender: String, view: IntrospectionView = .own) -> [String] {
        var names: Set<Substring> = []
        if let children = nodes[path.rawValue] {
            names.formUnion(children.everyone.keys)
            switch view {
            case .own: if let mine = children.owned[sender] { names.formUnion(mine.keys) }
            case .everything: for owned in children.owned.values { names.formUnion(owned.keys) }
            }
        }
        let viewer = view == .everything ? nil : sender
        for (root, subtree) in subtrees {
            if root == path {
                names.formUnion(subtree.childNames(below: "", visibleTo: viewer).map { $0[...] })
            } else if let below = Self.relative(path.rawValue, below: root.rawValue) {
                names.formUnion(subtree.childNames(below: below, visibleTo: viewer).map { $0[...] })
            } else if let rest = Self.relative(root.rawValue, below: path.rawValue),
                !subtree.childNames(below: "", visibleTo: viewer).isEmpty
            {
                // A node on the way to the subtree's root shows while the root leads to something the viewer sees.
                names.insert(rest.prefix { $0 != "/" })
            }
        }
        return names.map(String.init).sorted { a, b in
            if let x = UInt64(a), let y = UInt64(b) { return x < y }
            return a < b
        }
    }
}

/// The child nodes of one node that lead to exported objects: how many objects lie below each, those everyone
/// may see and those of each owner apart, so that listing what one connection may see costs only that.
struct ChildNodes {
    /// For each child, the objects at it and whether anything is below it, for everyone and for each owner.
    var everyone: [Substring: Int] = [:]
    var owned: [String: [Substring: Int]] = [:]

    var isEmpty: Bool { everyone.isEmpty && owned.isEmpty }

    /// True when nothing here is for `owner` (everyone, when nil).
    func isEmpty(for owner: String?) -> Bool {
        guard let owner else { return everyone.isEmpty }
        return owned[owner] == nil
    }

    mutating func add(_ child: Substring, owner: String?) {
        if let owner {
            owned[owner, default: [:]][child, default: 0] += 1
        } else {
            everyone[child, default: 0] += 1
        }
    }

    /// Counts one of `child`'s entries off; false when there was none.
    mutating func remove(_ child: Substring, owner: String?) -> Bool {
        if let owner {
            guard owned[owner] != nil, ChildNodes.decrement(&owned[owner]!, child) else { return false }
            if owned[owner]!.isEmpty { owned[owner] = nil }
            return true
        }
        return ChildNodes.decrement(&everyone, child)
    }

    private static func decrement(_ counts: inout [Substring: Int], _ child: Substring) -> Bool {
        guard let count = counts[child] else { return false }
        counts[child] = count > 1 ? count - 1 : nil
        return true
    }
}

/// What an `Introspect` caller is shown (``Connection/introspectionView``).
public enum IntrospectionView: Sendable, Equatable {
    /// The objects everyone may see, and those shown to the caller's connection alone.
    case own
    /// Every object, whichever connection it is shown to.
    case everything
}
