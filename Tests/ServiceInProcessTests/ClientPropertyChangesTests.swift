import DBus
import Testing

@testable import GeoClueService

/// The property changes of one event of a client's life, announced together as GeoClue's skeleton announces the
/// changes of one main-loop turn.
@Suite struct ClientPropertyChangesTests {
    static let first = ObjectPath("/org/freedesktop/GeoClue2/Client/1/Location/1")!
    static let second = ObjectPath("/org/freedesktop/GeoClue2/Client/1/Location/2")!

    @Test func changesOfOneInterfaceAreAnnouncedTogether() {
        var changes = ClientPropertyChanges()
        changes.active(from: false, to: true)
        changes.location(from: .root, to: Self.first)
        changes.available(from: false, to: true)
        #expect(changes.geoClueValues == ["Active": .boolean(true), "Location": .objectPath(Self.first)])
        #expect(changes.whereaboutsValues == ["Available": .boolean(true)])
    }

    @Test func aPropertyBackWhereItBeganIsNotAnnounced() {
        var changes = ClientPropertyChanges()
        changes.active(from: false, to: true)
        changes.active(from: true, to: false)
        changes.available(from: true, to: false)
        changes.available(from: false, to: true)
        #expect(changes.geoClueValues == nil)
        #expect(changes.whereaboutsValues == nil)
    }

    @Test func aPropertyChangedTwiceIsAnnouncedWithItsLastValue() {
        var changes = ClientPropertyChanges()
        changes.location(from: .root, to: Self.first)
        changes.location(from: Self.first, to: Self.second)
        #expect(changes.geoClueValues == ["Location": .objectPath(Self.second)])
    }

    @Test func nothingNotedIsNothingToAnnounce() {
        let changes = ClientPropertyChanges()
        #expect(changes.geoClueValues == nil)
        #expect(changes.whereaboutsValues == nil)
    }
}
