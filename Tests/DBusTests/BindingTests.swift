import DBus
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

/// A test object exercising the binding: echo, deferred replies, properties, signals, access control.
@BusActor
final class EchoObject: ExportedObject {
    var label = "hello"
    var counter: UInt32 = 7
    var deniedSender: String?
    var parkedCalls: [MethodCall] = []

    static let interface = InterfaceDescription(
        "io.github.whereabouts1.test.Echo",
        methods: [
            MethodDescription("Echo", inputs: [Argument("value", "v")], outputs: [Argument("value", "v")]),
            MethodDescription(
                "Add", inputs: [Argument("a", "i"), Argument("b", "i")], outputs: [Argument("sum", "i")]),
            MethodDescription("Park"),
            MethodDescription("ReleaseParked"),
            MethodDescription("Fail"),
        ],
        properties: [
            PropertyDescription("Label", "s", .readwrite),
            PropertyDescription("Counter", "u", .read),
        ],
        signals: [SignalDescription("Tick", arguments: [Argument("count", "u")])])

    var interfaces: [InterfaceDescription] { [EchoObject.interface] }

    func checkAccess(sender: String) -> DBusError? {
        sender == deniedSender ? .accessDenied("Access denied") : nil
    }

    func handle(_ call: MethodCall, interface: String, method: String) throws(DBusError) -> Reply {
        switch method {
        case "Echo": return .values(call.arguments)
        case "Add": return .values([.int32(call.arguments[0].int32! &+ call.arguments[1].int32!)])
        case "Park":
            parkedCalls.append(call)
            return .later
        case "ReleaseParked":
            for parked in parkedCalls { parked.reply() }
            parkedCalls.removeAll()
            return .values([])
        default: throw DBusError(name: "io.github.whereabouts1.test.Error.Deliberate", message: "as asked")
        }
    }

    func property(_ name: String, interface: String) -> DBusValue {
        name == "Label" ? .string(label) : .uint32(counter)
    }

    func setProperty(_ name: String, interface: String, value: DBusValue, sender: String) throws(DBusError) {
        label = value.string!
    }
}

let echoPath = ObjectPath("/io/github/whereabouts1/test/Echo")!
let echoName = "io.github.whereabouts1.test.Echo"

@BusActor
struct Pair {
    let bus: PrivateBus
    let server: Connection
    let client: Connection
    let object: EchoObject

    init() async throws {
        bus = try PrivateBus()
        server = try Connection.open(address: bus.address)
        client = try Connection.open(address: bus.address)
        object = EchoObject()
        server.export(object, at: echoPath)
        _ = try await server.requestName(echoName)
    }

    func call(
        _ member: String, _ arguments: [DBusValue] = [], interface: String = echoName, path: ObjectPath = echoPath
    )
        async throws(DBusError) -> [DBusValue]
    {
        try await client.call(
            destination: echoName, path: path, interface: interface, member: member, arguments: arguments)
    }

    func close() {
        client.close()
        server.close()
        bus.stop()
    }
}

@BusActor
func expectError(_ name: String, _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected \(name), got success")
    } catch let error as DBusError {
        #expect(error.name == name, "\(error)")
    } catch {
        Issue.record("expected \(name), got \(error)")
    }
}

let samples: [DBusValue] = [
    .byte(255), .boolean(true), .boolean(false), .int16(-3), .uint16(65535), .int32(Int32.min), .uint32(.max),
    .int64(.min), .uint64(.max), .double(-1.7976931348623157e308), .double(0.5), .string(""), .string("grüße ✓"),
    .objectPath(ObjectPath("/a/b_c/D9")!), .signature("a{sv}(tt)"),
    .array(element: "s", []), .array(element: "i", [.int32(1), .int32(2)]),
    .array(element: "as", [.strings(["x"]), .strings([])]),
    .vardict(["a": .uint32(1), "b": .vardict(["nested": .structure([.uint64(1), .uint64(2)])])]),
    .dictionary(key: "u", value: "s", [.init(.uint32(4), .string("four"))]),
    .dictionary(key: "s", value: "v", []),
    .structure([.uint64(1_700_000_000), .uint64(0)]),
    .structure([.string("s"), .structure([.double(1), .array(element: "y", [.byte(0)])])]),
    .variant(.variant(.string("deep"))),
]

@Suite("D-Bus binding on a private bus")
@BusActor
struct BindingTests {

    @Test("every type round-trips through a variant", arguments: samples)
    func roundTrip(_ value: DBusValue) async throws {
        let pair = try await Pair()
        defer { pair.close() }
        let reply = try await pair.call("Echo", [.variant(value)])
        #expect(reply == [.variant(value)])
    }

    @Test func methodsPropertiesAndErrors() async throws {
        let pair = try await Pair()
        defer { pair.close() }
        #expect(try await pair.call("Add", [.int32(40), .int32(2)]) == [.int32(42)])
        await expectError(DBusError.Name.invalidArgs) { _ = try await pair.call("Add", [.string("x")]) }
        await expectError(DBusError.Name.unknownMethod) { _ = try await pair.call("Frobnicate") }
        await expectError("io.github.whereabouts1.test.Error.Deliberate") { _ = try await pair.call("Fail") }
        await expectError(DBusError.Name.unknownMethod) {
            _ = try await pair.call("Echo", [.variant(.byte(1))], path: ObjectPath("/nothing/here")!)
        }

        let properties = "org.freedesktop.DBus.Properties"
        #expect(
            try await pair.call("Get", [.string(echoName), .string("Label")], interface: properties) == [
                .variant(.string("hello"))
            ])
        _ = try await pair.call(
            "Set", [.string(echoName), .string("Label"), .variant(.string("world"))], interface: properties)
        #expect(pair.object.label == "world")
        let all = try await pair.call("GetAll", [.string(echoName)], interface: properties)
        #expect(all.first?.stringKeyedEntries == ["Label": .string("world"), "Counter": .uint32(7)])
        await expectError(DBusError.Name.invalidArgs) {
            _ = try await pair.call(
                "Set", [.string(echoName), .string("Counter"), .variant(.uint32(1))], interface: properties)
        }
        await expectError(DBusError.Name.invalidArgs) {
            _ = try await pair.call(
                "Set", [.string(echoName), .string("Label"), .variant(.uint32(1))], interface: properties)
        }
        await expectError(DBusError.Name.invalidArgs) {
            _ = try await pair.call("Get", [.string(echoName), .string("NoSuchProp")], interface: properties)
        }
    }

    @Test func accessControlAppliesToMethodsAndProperties() async throws {
        let pair = try await Pair()
        defer { pair.close() }
        pair.object.deniedSender = pair.client.uniqueName
        await expectError(DBusError.Name.accessDenied) { _ = try await pair.call("Add", [.int32(1), .int32(2)]) }
        await expectError(DBusError.Name.accessDenied) {
            _ = try await pair.call(
                "Get", [.string(echoName), .string("Label")], interface: "org.freedesktop.DBus.Properties")
        }
        // GetAll leaves out each property the caller may not read, as GDBus does: an empty dictionary.
        let all = try await pair.call("GetAll", [.string(echoName)], interface: "org.freedesktop.DBus.Properties")
        #expect(all == [.vardict([:])])
    }

    @Test func introspectionListsInterfacesAndChildren() async throws {
        let pair = try await Pair()
        defer { pair.close() }
        let xml = try await pair.call("Introspect", interface: "org.freedesktop.DBus.Introspectable")
        let text = xml.first?.string ?? ""
        #expect(text.contains("<interface name=\"io.github.whereabouts1.test.Echo\">"))
        #expect(text.contains("<property type=\"s\" name=\"Label\" access=\"readwrite\"/>"))
        #expect(text.contains("<signal name=\"Tick\">"))
        let root = try await pair.call("Introspect", interface: "org.freedesktop.DBus.Introspectable", path: .root)
        #expect(root.first?.string?.contains("<node name=\"io\"/>") == true)
    }

    @Test func introspectionShowsEachConnectionTheNodesLeadingToWhatItMaySee() async throws {
        let pair = try await Pair()
        defer { pair.close() }
        let me = pair.client.uniqueName
        let owners: [String?] = [nil, me, ":9.99"]
        let paths = ["/a", "/a/b", "/a/b/c", "/a/b/d", "/a/e", "/a/e/f/g", "/h"].map { ObjectPath($0)! }
        var exported: [ObjectPath: String?] = [echoPath: String?.none]
        var generator = SplitMix64(seed: 7)
        for step in 0..<120 {
            let path = paths[Int(generator.next() % UInt64(paths.count))]
            if exported[path] != nil, generator.next() % 2 == 0 {
                pair.server.unexport(path)
                exported[path] = nil
            } else {
                let owner = owners[Int(generator.next() % UInt64(owners.count))]
                pair.server.export(EchoObject(), at: path, visibleTo: owner)
                exported[path] = .some(owner)
            }
            // What the client should see below each node: the names leading to an object everyone or it may see.
            for node in ["/", "/a", "/a/b", "/a/e", "/a/e/f"] {
                let prefix = node == "/" ? "/" : node + "/"
                var expected = Set<String>()
                for (path, owner) in exported where owner == nil || owner == me {
                    guard path.rawValue.hasPrefix(prefix) else { continue }
                    expected.insert(String(path.rawValue.dropFirst(prefix.count).prefix { $0 != "/" }))
                }
                let xml = try await pair.call(
                    "Introspect", interface: "org.freedesktop.DBus.Introspectable", path: ObjectPath(node)!)
                let shown = Set(
                    (xml.first?.string ?? "").split(separator: "<node name=\"").dropFirst()
                        .map { String($0.prefix { $0 != "\"" }) })
                #expect(shown == expected, "step \(step), node \(node)")
            }
        }
    }

    @Test func aSubtreeServesItsObjectsAndShowsThemToItsOwnerAlone() async throws {
        final class Numbered: ExportedSubtree {
            var objects: [String: EchoObject] = [:]
            var owner = ""
            func object(at relativePath: Substring) -> (object: any ExportedObject, owner: String?)? {
                objects[String(relativePath)].map { ($0, owner) }
            }
            func childNames(below relativePath: Substring, visibleTo viewer: String?) -> [String] {
                relativePath.isEmpty && (viewer == nil || viewer == owner) ? Array(objects.keys) : []
            }
        }
        let pair = try await Pair()
        defer { pair.close() }
        let stranger = try Connection.open(address: pair.bus.address)
        defer { stranger.close() }
        let base = ObjectPath("/io/github/whereabouts1/test/Set")!
        let numbered = Numbered()
        numbered.objects = ["1": EchoObject(), "2": EchoObject()]
        numbered.owner = pair.client.uniqueName
        pair.server.exportSubtree(numbered, at: base)
        func introspect(_ connection: Connection, _ path: ObjectPath) async throws -> String {
            let reply = try await connection.call(
                destination: echoName, path: path, interface: "org.freedesktop.DBus.Introspectable",
                member: "Introspect")
            return reply.first?.string ?? ""
        }
        #expect(try await pair.call("Add", [.int32(2), .int32(3)], path: base.appending("2")) == [.int32(5)])
        await expectError(DBusError.Name.unknownMethod) {
            _ = try await pair.call("Add", [.int32(1), .int32(1)], path: base.appending("3"))
        }
        let listed = try await introspect(pair.client, base)
        #expect(listed.contains("<node name=\"1\"/>") && listed.contains("<node name=\"2\"/>"), "\(listed)")
        #expect(try await introspect(pair.client, base.appending("1")).contains(echoName))
        #expect(
            try await introspect(pair.client, ObjectPath("/io/github/whereabouts1/test")!).contains(
                "<node name=\"Set\"/>"))
        let hidden = try await introspect(stranger, ObjectPath("/io/github/whereabouts1/test")!)
        let hiddenObject = try await introspect(stranger, base.appending("1"))
        #expect(!hidden.contains("Set") && !hiddenObject.contains(echoName))
        pair.server.unexportSubtree(at: base)
        await expectError(DBusError.Name.unknownMethod) {
            _ = try await pair.call("Add", [.int32(2), .int32(3)], path: base.appending("2"))
        }
        let after = try await introspect(pair.client, ObjectPath("/io/github/whereabouts1/test")!)
        #expect(!after.contains("Set"))
    }

    @Test func deferredRepliesAndTimeouts() async throws {
        let pair = try await Pair()
        defer { pair.close() }
        let parked = Task { @BusActor in try await pair.call("Park") }
        await expectError(DBusError.Name.noReply) {
            _ = try await pair.client.call(
                destination: echoName, path: echoPath, interface: echoName, member: "Park", timeout: .milliseconds(200))
        }
        _ = try await pair.call("ReleaseParked")
        #expect(try await parked.value == [])
    }

    @Test func unicastSignalsReachOnlyTheirDestination() async throws {
        let pair = try await Pair()
        defer { pair.close() }
        let bystander = try Connection.open(address: pair.bus.address)
        defer { bystander.close() }
        var received: [UInt32] = []
        var overheard: [UInt32] = []
        _ = try await pair.client.subscribe(SignalMatch(interface: echoName, member: "Tick")) {
            received.append($0.arguments()[0].uint32!)
        }
        _ = try await bystander.subscribe(SignalMatch(interface: echoName)) {
            overheard.append($0.arguments()[0].uint32!)
        }
        pair.server.emitSignal(
            path: echoPath, interface: echoName, member: "Tick", arguments: [.uint32(1)],
            destination: pair.client.uniqueName)
        pair.server.emitSignal(path: echoPath, interface: echoName, member: "Tick", arguments: [.uint32(2)])
        // A round trip through the server orders the signals before the reply.
        _ = try await pair.call("Add", [.int32(0), .int32(0)])
        _ = try await bystander.call(
            destination: echoName, path: echoPath, interface: echoName, member: "Add",
            arguments: [.int32(0), .int32(0)])
        #expect(received == [1, 2])
        #expect(overheard == [2])
    }

    @Test func nameOwnerChangesAndCredentials() async throws {
        let pair = try await Pair()
        defer { pair.close() }
        let transient = try Connection.open(address: pair.bus.address)
        let name = transient.uniqueName
        var vanished: [String] = []
        _ = try await pair.server.subscribe(
            SignalMatch(
                sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                stringArguments: [2: ""])
        ) { vanished.append($0.arguments()[0].string!) }
        let credentials = try await withCheckedContinuation { continuation in
            pair.server.credentials(of: name) { continuation.resume(returning: $0) }
        }.get()
        #expect(credentials.uid == getuid())
        #expect(credentials.pid == UInt32(getpid()))
        transient.close()
        for _ in 0..<200 where !vanished.contains(name) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(vanished.contains(name))
    }

    @Test func aMatchSentAheadOfACallIsInPlaceOnceTheCallIsAnswered() async throws {
        let pair = try await Pair()
        defer { pair.close() }
        let listener = try Connection.open(address: pair.bus.address)
        defer { listener.close() }
        var received: [UInt32] = []
        var ran = false
        let (subscription, owned) = try await listener.subscribe(
            SignalMatch(interface: echoName, member: "Tick"), handler: { received.append($0.arguments()[0].uint32!) },
            whileRunning: { () async throws(DBusError) in
                ran = true
                return try await listener.requestName("io.github.whereabouts1.test.Pipelined")
            })
        #expect(ran && owned == .primaryOwner)
        // The match went to the bus before RequestName, so once RequestName is answered a signal reaches it.
        pair.server.emitSignal(path: echoPath, interface: echoName, member: "Tick", arguments: [.uint32(5)])
        _ = try await listener.call(
            destination: echoName, path: echoPath, interface: echoName, member: "Add",
            arguments: [.int32(0), .int32(0)])
        #expect(received == [5])
        listener.unsubscribe(subscription)
    }

    @Test func aMatchTheBusRefusesFailsAfterWhatRanMeanwhile() async throws {
        let pair = try await Pair()
        defer { pair.close() }
        var ran = false
        await expectError("org.freedesktop.DBus.Error.MatchRuleInvalid") {
            _ = try await pair.client.subscribe(
                SignalMatch(interface: "not an interface"),
                handler: { _ in Issue.record("a refused match delivered a signal") },
                whileRunning: { () async throws(DBusError) in ran = true })
        }
        #expect(ran)
        pair.server.emitSignal(path: echoPath, interface: echoName, member: "Tick", arguments: [.uint32(1)])
        _ = try await pair.call("Add", [.int32(0), .int32(0)])
    }

    @Test func losingTheBusIsReported() async throws {
        let bus = try PrivateBus()
        let connection = try Connection.open(address: bus.address)
        var lost = false
        connection.onDisconnect = { lost = true }
        bus.stop()
        for _ in 0..<300 where !lost { try await Task.sleep(for: .milliseconds(10)) }
        #expect(lost)
        connection.close()
    }
}
