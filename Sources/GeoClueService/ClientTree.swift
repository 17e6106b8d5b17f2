import DBus
import Loop
import WhereaboutsCore

/// Every client and its Location objects, served as one subtree at `/org/freedesktop/GeoClue2/Client`: a path is
/// found through the registry when it is called, so a client costs the connection no table entry, and no index
/// entry at the nodes above it, of its own.
///
/// Each client, and everything below it, is shown to the connection that owns the client alone.
@BusActor
final class ClientTree: ExportedSubtree {
    unowned let service: GeoClueService

    init(service: GeoClueService) { self.service = service }

    /// `N` is client N, `N/…` one of its Location objects (``ClientObject/object(at:)``); `07` is no client.
    func object(at relativePath: Substring) -> (object: any ExportedObject, owner: String?)? {
        let (first, rest) = relativePath.firstElement
        guard let client = client(named: first) else { return nil }
        guard let rest else { return (client, client.owner) }
        return client.object(at: rest).map { ($0, client.owner) }
    }

    func childNames(below relativePath: Substring, visibleTo viewer: String?) -> [String] {
        guard !relativePath.isEmpty else {
            let numbers = viewer.map { service.clients.numbers(ownedBy: $0) } ?? Array(service.clients.numbers)
            return numbers.map { String($0) }
        }
        let (first, rest) = relativePath.firstElement
        guard let client = client(named: first), viewer == nil || viewer == client.owner else { return [] }
        return client.childNames(below: rest ?? "")
    }

    private func client(named name: Substring) -> ClientObject? {
        guard let number = UInt32(name), String(number) == name else { return nil }
        return service.clients[number]
    }
}

extension Substring {
    /// The first element of a relative object path and what follows its slash, if anything does: `7/Location/3` is
    /// `7` and `Location/3`.
    var firstElement: (first: Substring, rest: Substring?) {
        guard let slash = firstIndex(of: "/") else { return (self, nil) }
        return (self[..<slash], self[index(after: slash)...])
    }
}
