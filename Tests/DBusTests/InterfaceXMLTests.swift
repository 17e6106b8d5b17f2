import Foundation
import TestBasics
import TestSupport
import Testing

/// The members of GeoClue's published interfaces (`interface/org.freedesktop.GeoClue2.*.xml`, identical in
/// GeoClue 2.6.0, 2.7.1 and 2.8.0), which our copies in `dbus/` must match exactly.
enum GeoClueInterfaces {
    /// The annotation GeoClue gives the thresholds.
    static let defaultZero = ["org.freedesktop.Accounts.DefaultValue": "0"]

    static let manager = InterfaceSpec(
        "org.freedesktop.GeoClue2.Manager",
        methods: [
            MethodSpec("GetClient", [ArgSpec("client", "o", .out)]),
            MethodSpec("CreateClient", [ArgSpec("client", "o", .out)]),
            MethodSpec("DeleteClient", [ArgSpec("client", "o", .in)]),
            MethodSpec("AddAgent", [ArgSpec("id", "s", .in)]),
        ],
        properties: [
            PropertySpec("InUse", "b", .read),
            PropertySpec("AvailableAccuracyLevel", "u", .read),
        ])

    static let client = InterfaceSpec(
        "org.freedesktop.GeoClue2.Client",
        methods: [MethodSpec("Start"), MethodSpec("Stop")],
        signals: [SignalSpec("LocationUpdated", [ArgSpec("old", "o"), ArgSpec("new", "o")])],
        properties: [
            PropertySpec("Location", "o", .read),
            PropertySpec("DistanceThreshold", "u", .readwrite, annotations: GeoClueInterfaces.defaultZero),
            PropertySpec("TimeThreshold", "u", .readwrite, annotations: GeoClueInterfaces.defaultZero),
            PropertySpec("DesktopId", "s", .readwrite),
            PropertySpec("RequestedAccuracyLevel", "u", .readwrite),
            PropertySpec("Active", "b", .read),
        ])

    static let location = InterfaceSpec(
        "org.freedesktop.GeoClue2.Location",
        properties: [
            PropertySpec("Latitude", "d", .read),
            PropertySpec("Longitude", "d", .read),
            PropertySpec("Accuracy", "d", .read),
            PropertySpec("Altitude", "d", .read),
            PropertySpec("Speed", "d", .read),
            PropertySpec("Heading", "d", .read),
            PropertySpec("Description", "s", .read),
            PropertySpec("Timestamp", "(tt)", .read),
        ])
}

/// A document with one interface `x.Y` holding `members`.
private func inXY(_ members: String) -> String { #"<node><interface name="x.Y">"# + members + "</interface></node>" }

@Suite struct InterfaceXMLParserTests {
    @Test func parsesSeveralInterfacesAndChildren() throws {
        let (interfaces, children) = try InterfaceXML.parse(
            """
            <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
            <node name="/org/example">
              <!-- a comment -->
              <interface name="org.example.A">
                <annotation name="org.freedesktop.DBus.Deprecated" value="false"/>
                <method name="Add">
                  <arg name="a" type="i"/>
                  <arg name="b" type="i" direction="in"/>
                  <arg name="sum" type="i" direction="out">
                    <annotation name="org.example.Note" value="x"/>
                  </arg>
                </method>
                <signal name="Changed">
                  <arg name="what" type="as"/>
                  <arg type="a{sv}" direction="out"/>
                </signal>
                <property name="Count" type="u" access="read"/>
                <property name="Label" type="s" access="readwrite">
                  <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="true"/>
                </property>
                <property name="Secret" type="ay" access="write"/>
              </interface>
              <interface name="org.example.B"/>
              <node name="child1"/>
              <node name="child2">
                <interface name="org.example.Hidden"><method name="Nope"/></interface>
                <node name="grandchild"/>
              </node>
            </node>
            """)
        #expect(Set(interfaces.keys) == ["org.example.A", "org.example.B"])
        #expect(children == ["child1", "child2"])
        #expect(
            interfaces["org.example.A"]
                == InterfaceSpec(
                    "org.example.A",
                    methods: [
                        MethodSpec("Add", [ArgSpec("a", "i", .in), ArgSpec("b", "i", .in), ArgSpec("sum", "i", .out)])
                    ],
                    signals: [SignalSpec("Changed", [ArgSpec("what", "as"), ArgSpec("", "a{sv}")])],
                    properties: [
                        PropertySpec("Count", "u", .read),
                        PropertySpec(
                            "Label", "s", .readwrite,
                            annotations: ["org.freedesktop.DBus.Property.EmitsChangedSignal": "true"]),
                        PropertySpec("Secret", "ay", .write),
                    ]))
        #expect(interfaces["org.example.B"] == InterfaceSpec("org.example.B"))
    }

    @Test func argumentOrderMatters() throws {
        let one = try InterfaceXML.parse(
            inXY(#"<method name="M"><arg name="a" type="s"/><arg name="b" type="u"/></method>"#))
        let two = try InterfaceXML.parse(
            inXY(#"<method name="M"><arg name="b" type="u"/><arg name="a" type="s"/></method>"#))
        #expect(one.interfaces["x.Y"] != two.interfaces["x.Y"])
    }

    @Test func skipsForeignNamespaceDocumentation() throws {
        let (interfaces, _) = try InterfaceXML.parse(
            """
            <node xmlns:doc="http://www.freedesktop.org/dbus/1.0/doc.dtd">
              <interface name="x.Y">
                <doc:doc><doc:para>Some <doc:ref>text</doc:ref>.</doc:para></doc:doc>
                <property name="P" type="b" access="read"/>
              </interface>
            </node>
            """)
        #expect(interfaces["x.Y"] == InterfaceSpec("x.Y", properties: [PropertySpec("P", "b", .read)]))
    }

    @Test func emptyNodeHasNothing() throws {
        let (interfaces, children) = try InterfaceXML.parse("<node/>")
        #expect(interfaces.isEmpty)
        #expect(children.isEmpty)
    }

    @Test(arguments: [
        "",
        "<node>",
        "<notnode/>",
        #"<node><interface/></node>"#,
        inXY(#"<property name="P" type="b"/>"#),
        inXY(#"<property name="P" type="b" access="rw"/>"#),
        inXY(#"<property name="P" access="read"/>"#),
        inXY(#"<method name="M"><arg name="a" type="s" direction="sideways"/></method>"#),
        inXY(#"<signal name="S"><arg name="a" type="s" direction="in"/></signal>"#),
        inXY(#"<method name="M"><arg name="a"/></method>"#),
        #"<node><interface name="x.Y"/><interface name="x.Y"/></node>"#,
        inXY(#"<method name="M"/><method name="M"/>"#),
        inXY(#"<arg name="a" type="s"/>"#),
        #"<node><method name="M"/></node>"#,
        #"<node><node/></node>"#,
        inXY("stray text"),
    ])
    func rejectsMalformedDocuments(_ xml: String) {
        #expect(throws: InterfaceXMLError.self) { try InterfaceXML.parse(xml) }
    }
}

@Suite struct GeoClueInterfaceFileTests {
    /// GeoClue 2.6's own interface files, as its package (`geoclue-2.0`) installs them.
    static let installed = URL(fileURLWithPath: "/usr/share/dbus-1/interfaces")

    /// Ours say what GeoClue's say, member by member and annotation by annotation: introspection shows what GeoClue
    /// shows (ours add comments only).
    @Test(arguments: [GeoClueInterfaces.manager, GeoClueInterfaces.client, GeoClueInterfaces.location])
    func fileMatchesTheInstalledGeoClue(_ expected: InterfaceSpec) throws {
        let file = Self.installed.appendingPathComponent("\(expected.name).xml")
        guard FileManager.default.fileExists(atPath: file.path) else {
            throw TestEnvironmentError("\(file.path) is not installed (Debian package geoclue-2.0)")
        }
        let theirs = try #require(try InterfaceXML.parse(contentsOf: file).interfaces[expected.name])
        let ours = try #require(try Self.load(expected.name).interfaces[expected.name])
        #expect(ours.memberLines == theirs.memberLines)
        #expect(ours == theirs)
    }

    static func load(_ name: String) throws -> (interfaces: [String: InterfaceSpec], children: [String]) {
        try InterfaceXML.parse(
            contentsOf: ProjectPaths.root.appendingPathComponent("dbus").appendingPathComponent("\(name).xml"))
    }

    @Test(arguments: [GeoClueInterfaces.manager, GeoClueInterfaces.client, GeoClueInterfaces.location])
    func fileMatchesGeoClueExactly(_ expected: InterfaceSpec) throws {
        let (interfaces, children) = try Self.load(expected.name)
        #expect(Array(interfaces.keys) == [expected.name])
        #expect(children.isEmpty)
        let actual = try #require(interfaces[expected.name])
        // Member by member first, for a readable failure; then the whole value, which also checks document order.
        #expect(actual.memberLines == expected.memberLines)
        #expect(actual == expected)
    }

    @Test func managerArgumentNames() throws {
        let manager = try #require(
            try Self.load("org.freedesktop.GeoClue2.Manager").interfaces["org.freedesktop.GeoClue2.Manager"])
        #expect(manager.method("GetClient")?.args == [ArgSpec("client", "o", .out)])
        #expect(manager.method("CreateClient")?.args == [ArgSpec("client", "o", .out)])
        #expect(manager.method("DeleteClient")?.args == [ArgSpec("client", "o", .in)])
        #expect(manager.method("AddAgent")?.args == [ArgSpec("id", "s", .in)])
        #expect(manager.signals.isEmpty)
    }

    @Test func clientSignalAndWritableProperties() throws {
        let client = try #require(
            try Self.load("org.freedesktop.GeoClue2.Client").interfaces["org.freedesktop.GeoClue2.Client"])
        #expect(client.signal("LocationUpdated")?.args.map(\.name) == ["old", "new"])
        #expect(
            Set(client.properties.filter { $0.access == .readwrite }.map(\.name))
                == ["DistanceThreshold", "TimeThreshold", "DesktopId", "RequestedAccuracyLevel"])
    }

    @Test func locationTimestampIsAPairOfUInt64() throws {
        let location = try #require(
            try Self.load("org.freedesktop.GeoClue2.Location").interfaces["org.freedesktop.GeoClue2.Location"])
        #expect(location.property("Timestamp") == PropertySpec("Timestamp", "(tt)", .read))
        #expect(location.methods.isEmpty && location.signals.isEmpty)
    }

    /// dbus-daemon's `<includedir>` reads every `*.conf` there; the folder must hold nothing it would choke on.
    @Test func policyFolderHoldsOnlyKnownFileKinds() throws {
        let folder = ProjectPaths.root.appendingPathComponent("dbus")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(names.contains("org.freedesktop.GeoClue2.conf"))
        #expect(names.contains("org.freedesktop.GeoClue2.service"))
        for name in names {
            #expect(
                name.hasSuffix(".conf") || name.hasSuffix(".xml") || name.hasSuffix(".service"),
                "unexpected file dbus/\(name)")
        }
    }
}
