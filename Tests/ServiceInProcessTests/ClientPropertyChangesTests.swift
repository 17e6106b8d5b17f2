import DBus
import Testing

@testable import GeoClueService

/// The property changes of one event of a client's life, announced together as GeoClue's skeleton announces the
/// changes of one main-loop turn.
@Suite struct ClientPropertyChangesTests {
    static let geoClue = "org.freedesktop.GeoClue2.Client"
    static let ours = "io.github.whereabouts1.Client"

    @Test func changesOfOneInterfaceAreAnnouncedTogether() {
        var changes = ClientPropertyChanges()
        changes.note("Active", of: Self.geoClue, from: .boolean(false), to: .boolean(true))
        changes.note("Location", of: Self.geoClue, from: .objectPath(.root), to: .objectPath(ObjectPath("/a")!))
        changes.note("Available", of: Self.ours, from: .boolean(false), to: .boolean(true))
        let announcements = changes.announcements
        #expect(announcements.map(\.interface) == [Self.geoClue, Self.ours])
        #expect(announcements.first?.values == ["Active": .boolean(true), "Location": .objectPath(ObjectPath("/a")!)])
        #expect(announcements.last?.values == ["Available": .boolean(true)])
    }

    @Test func aPropertyBackWhereItBeganIsNotAnnounced() {
        var changes = ClientPropertyChanges()
        changes.note("Active", of: Self.geoClue, from: .boolean(false), to: .boolean(true))
        changes.note("Active", of: Self.geoClue, from: .boolean(true), to: .boolean(false))
        #expect(changes.announcements.isEmpty)
    }

    @Test func aPropertyChangedTwiceIsAnnouncedWithItsLastValue() {
        var changes = ClientPropertyChanges()
        changes.note("Location", of: Self.geoClue, from: .objectPath(.root), to: .objectPath(ObjectPath("/a")!))
        changes.note(
            "Location", of: Self.geoClue, from: .objectPath(ObjectPath("/a")!), to: .objectPath(ObjectPath("/b")!))
        #expect(changes.announcements.first?.values == ["Location": .objectPath(ObjectPath("/b")!)])
    }
}
