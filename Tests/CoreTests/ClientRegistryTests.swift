import TestBasics
import Testing
import WhereaboutsCore

/// A client that knows its number.
private final class Numbered {
    let number: UInt32
    init(_ number: UInt32) { self.number = number }
}

private func registry(_ perConnection: Int = 3, _ perUser: Int = 4, _ total: Int = 5) -> ClientRegistry<Numbered> {
    ClientRegistry(limits: ShareLimits(perConnection: perConnection, perUser: perUser, total: total))
}

private func added(_ registry: inout ClientRegistry<Numbered>, _ owner: String, uid: UInt32) -> Numbered? {
    try? registry.add(owner: owner, uid: uid) { Numbered($0) }.get()
}

@Test func clientsAreNumberedFromOneAndFoundByNumberAndOwner() {
    var clients = registry()
    let first = added(&clients, ":1.1", uid: 1000)
    let second = added(&clients, ":1.1", uid: 1000)
    #expect(first?.number == 1 && second?.number == 2)
    #expect(clients[2] === second && clients[3] == nil)
    #expect(clients.first(ownedBy: ":1.1") === first)
    #expect(clients.first(ownedBy: ":1.2") == nil)
    #expect(clients.count == 2)
}

@Test func eachLimitRefusesWithTheNumberHeld() {
    var clients = registry()
    for _ in 0..<3 { _ = added(&clients, ":1.1", uid: 1000) }
    #expect(clients.add(owner: ":1.1", uid: 1000) { Numbered($0) }.failure == .connection(held: 3))
    _ = added(&clients, ":1.2", uid: 1000)
    #expect(clients.add(owner: ":1.3", uid: 1000) { Numbered($0) }.failure == .user(1000, held: 4))
    _ = added(&clients, ":1.4", uid: 1001)
    #expect(clients.add(owner: ":1.5", uid: 1002) { Numbered($0) }.failure == .total(held: 5))
    // A refusal spends no number.
    _ = clients.remove(1)
    #expect(added(&clients, ":1.5", uid: 1002)?.number == 6)
}

@Test func removingAClientFreesItsShareOfEachLimit() {
    var clients = registry()
    for _ in 0..<3 { _ = added(&clients, ":1.1", uid: 1000) }
    #expect(clients.remove(2)?.number == 2)
    #expect(clients.remove(2) == nil)
    #expect(clients.first(ownedBy: ":1.1")?.number == 1)
    #expect(added(&clients, ":1.1", uid: 1000)?.number == 4)
    _ = clients.remove(1)
    #expect(clients.first(ownedBy: ":1.1")?.number == 3, "the oldest left is reused")
}

@Test func aConnectionThatLeavesTakesItsClientsInTheOrderTheyWereMade() {
    var clients = registry(10, 10, 10)
    for owner in [":1.1", ":1.2", ":1.1", ":1.1"] { _ = added(&clients, owner, uid: 1000) }
    #expect(clients.removeAll(ownedBy: ":1.1").map(\.number) == [1, 3, 4])
    #expect(clients.removeAll(ownedBy: ":1.1").isEmpty)
    #expect(clients.count == 1 && clients.first(ownedBy: ":1.2")?.number == 2)
    // The user's share is free again.
    for _ in 0..<9 { #expect(added(&clients, ":1.3", uid: 1000) != nil) }
    #expect(added(&clients, ":1.3", uid: 1000) == nil)
}

@Test func theRegistryAgreesWithAModelOverARandomSequence() {
    var clients = registry(6, 9, 12)
    var model: [UInt32: (owner: String, uid: UInt32)] = [:]
    var random = SplitMix64(seed: 15)
    var next: UInt32 = 1
    for _ in 0..<5000 {
        let owner = ":1.\(random.next() % 4)"
        let uid = UInt32(1000 + random.next() % 3)
        switch random.next() % 3 {
        case 0:
            let owned = model.values.filter { $0.owner == owner }.count
            let users = model.values.filter { $0.uid == uid }.count
            let fits = owned < 6 && users < 9 && model.count < 12
            let client = added(&clients, owner, uid: uid)
            #expect((client != nil) == fits)
            if let client {
                #expect(client.number == next)
                model[client.number] = (owner, uid)
                next += 1
            }
        case 1:
            let number = UInt32(random.next() % UInt64(next + 1))
            #expect((clients.remove(number) != nil) == (model.removeValue(forKey: number) != nil))
        default:
            let gone = clients.removeAll(ownedBy: owner).map(\.number)
            let expected = model.filter { $0.value.owner == owner }.keys.sorted()
            #expect(gone == expected)
            for number in expected { model[number] = nil }
        }
        #expect(clients.count == model.count)
        #expect(clients.first(ownedBy: owner)?.number == model.filter { $0.value.owner == owner }.keys.min())
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let failure) = self { failure } else { nil }
    }
}
