import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Which way a method argument travels.
public enum ArgDirection: String, Hashable, Sendable {
    case `in`
    case out
}

/// Whether a property can be read, written or both.
public enum PropertyAccess: String, Hashable, Sendable {
    case read
    case write
    case readwrite
}

/// One argument of a method or signal: its name (empty when the XML gives none), signature and direction.
///
/// Method arguments without a `direction` attribute are `in`, as the introspection format specifies; signal
/// arguments are always `out`.
public struct ArgSpec: Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var type: String
    public var direction: ArgDirection

    public init(_ name: String, _ type: String, _ direction: ArgDirection = .in) {
        self.name = name
        self.type = type
        self.direction = direction
    }

    public var description: String { "\(direction.rawValue) \(type) \(name)" }
}

/// A method and its arguments, in order.
public struct MethodSpec: Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var args: [ArgSpec]

    public init(_ name: String, _ args: [ArgSpec] = []) {
        self.name = name
        self.args = args
    }

    public var description: String { "method \(name)(\(args.map(\.description).joined(separator: ", ")))" }
}

/// A signal and its arguments, in order.
public struct SignalSpec: Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var args: [ArgSpec]

    public init(_ name: String, _ args: [ArgSpec] = []) {
        self.name = name
        self.args = args.map { ArgSpec($0.name, $0.type, .out) }
    }

    public var description: String { "signal \(name)(\(args.map { "\($0.type) \($0.name)" }.joined(separator: ", ")))" }
}

/// A property, its signature, access and annotations (such as GeoClue's `org.freedesktop.Accounts.DefaultValue`).
public struct PropertySpec: Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var type: String
    public var access: PropertyAccess
    public var annotations: [String: String]

    public init(_ name: String, _ type: String, _ access: PropertyAccess, annotations: [String: String] = [:]) {
        self.name = name
        self.type = type
        self.access = access
        self.annotations = annotations
    }

    public var description: String {
        "property \(name) \(type) \(access.rawValue)"
            + annotations.sorted { $0.key < $1.key }.map { " [\($0.key)=\($0.value)]" }.joined()
    }
}

/// The members of one D-Bus interface as an introspection document declares them, in document order.
///
/// Annotations and comments are not part of the value, so two descriptions of the same interface compare equal
/// whatever their documentation says.
public struct InterfaceSpec: Hashable, Sendable {
    public var name: String
    public var methods: [MethodSpec]
    public var signals: [SignalSpec]
    public var properties: [PropertySpec]

    public init(_ name: String, methods: [MethodSpec] = [], signals: [SignalSpec] = [], properties: [PropertySpec] = [])
    {
        self.name = name
        self.methods = methods
        self.signals = signals
        self.properties = properties
    }

    public func method(_ name: String) -> MethodSpec? { methods.first { $0.name == name } }
    public func signal(_ name: String) -> SignalSpec? { signals.first { $0.name == name } }
    public func property(_ name: String) -> PropertySpec? { properties.first { $0.name == name } }

    /// Every member, one line each, sorted: a readable, order-insensitive form for comparisons and failure output.
    public var memberLines: [String] {
        (methods.map(\.description) + signals.map(\.description) + properties.map(\.description)).sorted()
    }
}

/// A malformed or unexpected introspection document.
public struct InterfaceXMLError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Reads D-Bus introspection XML (`<node>` documents, as `Introspect` returns them or as interface files hold them).
public enum InterfaceXML {
    /// The interfaces declared directly on the document's root node, by name, and the names of its child nodes
    /// in document order. The contents of child nodes (if the document nests them), annotations, comments and
    /// elements in other namespaces (such as `<doc:doc>`) are skipped.
    public static func parse(_ xml: String) throws -> (interfaces: [String: InterfaceSpec], children: [String]) {
        let parser = XMLParser(data: Data(xml.utf8))
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        let reader = IntrospectionReader()
        parser.delegate = reader
        let parsed = parser.parse()
        if let error = reader.error {
            throw InterfaceXMLError("line \(parser.lineNumber): \(error)")
        }
        guard parsed else {
            let underlying = parser.parserError.map { String(describing: $0) } ?? "unknown error"
            throw InterfaceXMLError("line \(parser.lineNumber): not well-formed XML (\(underlying))")
        }
        guard reader.sawRoot else { throw InterfaceXMLError("no <node> element") }
        // Some XMLParser implementations accept a document that ends before its root element is closed.
        guard reader.closedRoot else { throw InterfaceXMLError("the document ends inside its <node> element") }
        return (reader.interfaces, reader.children)
    }

    /// Parses the introspection file at `url`.
    public static func parse(contentsOf url: URL) throws -> (interfaces: [String: InterfaceSpec], children: [String]) {
        let text = try String(contentsOf: url, encoding: .utf8)
        do {
            return try parse(text)
        } catch let error as InterfaceXMLError {
            throw InterfaceXMLError("\(url.path): \(error.description)")
        }
    }
}

/// The XMLParser delegate behind ``InterfaceXML/parse(_:)``; a small state machine over the element stack.
private final class IntrospectionReader: NSObject, XMLParserDelegate {
    var interfaces: [String: InterfaceSpec] = [:]
    var children: [String] = []
    var sawRoot = false
    var closedRoot = false
    var error: String?

    private var stack: [String] = []
    /// Depth inside a child node or foreign element being skipped; 0 when not inside one.
    private var skipping = 0
    private var interface: InterfaceSpec?
    private var method: MethodSpec?
    private var signal: SignalSpec?

    private func fail(_ message: String, _ parser: XMLParser) {
        if error == nil { error = message }
        parser.abortParsing()
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        if skipping > 0 {
            skipping += 1
            return
        }
        let parent = stack.last
        if elementName.contains(":") && parent != nil {
            // Foreign-namespace elements, such as the `<doc:doc>` documentation some interface files carry.
            skipping = 1
            return
        }
        switch (parent, elementName) {
        case (nil, "node"):
            sawRoot = true
        case (nil, _):
            return fail("the root element is <\(elementName)>, not <node>", parser)
        case ("node", "node"):
            guard let name = attributes["name"], !name.isEmpty else {
                return fail("child <node> without a name", parser)
            }
            children.append(name)
            skipping = 1
            return
        case ("node", "interface"):
            guard let name = attributes["name"], !name.isEmpty else {
                return fail("<interface> without a name", parser)
            }
            guard interfaces[name] == nil else { return fail("interface \(name) declared twice", parser) }
            interface = InterfaceSpec(name)
        case ("interface", "method"):
            guard let name = attributes["name"], !name.isEmpty else { return fail("<method> without a name", parser) }
            guard interface?.method(name) == nil else { return fail("method \(name) declared twice", parser) }
            method = MethodSpec(name)
        case ("interface", "signal"):
            guard let name = attributes["name"], !name.isEmpty else { return fail("<signal> without a name", parser) }
            guard interface?.signal(name) == nil else { return fail("signal \(name) declared twice", parser) }
            signal = SignalSpec(name)
        case ("interface", "property"):
            guard let name = attributes["name"], !name.isEmpty else { return fail("<property> without a name", parser) }
            guard let type = attributes["type"], !type.isEmpty else {
                return fail("property \(name) without a type", parser)
            }
            guard let access = attributes["access"].flatMap(PropertyAccess.init(rawValue:)) else {
                return fail("property \(name) has access \(attributes["access"] ?? "(none)")", parser)
            }
            guard interface?.property(name) == nil else { return fail("property \(name) declared twice", parser) }
            interface?.properties.append(PropertySpec(name, type, access))
        case ("method", "arg"):
            guard let type = attributes["type"], !type.isEmpty else { return fail("argument without a type", parser) }
            guard let direction = ArgDirection(rawValue: attributes["direction"] ?? "in") else {
                return fail("argument direction \(attributes["direction"] ?? "")", parser)
            }
            method?.args.append(ArgSpec(attributes["name"] ?? "", type, direction))
        case ("signal", "arg"):
            guard let type = attributes["type"], !type.isEmpty else { return fail("argument without a type", parser) }
            if let direction = attributes["direction"], direction != "out" {
                return fail("signal argument with direction \(direction)", parser)
            }
            signal?.args.append(ArgSpec(attributes["name"] ?? "", type, .out))
        case (_, "annotation"):
            // Annotations may appear on interfaces, members and arguments; a property's are part of its value.
            guard ["interface", "method", "signal", "property", "arg"].contains(parent) else {
                return fail("<annotation> inside <\(parent ?? "")>", parser)
            }
            if parent == "property", let name = attributes["name"], let value = attributes["value"],
                let last = interface?.properties.indices.last
            {
                interface?.properties[last].annotations[name] = value
            }
        default:
            return fail("unexpected <\(elementName)> inside <\(parent ?? "")>", parser)
        }
        stack.append(elementName)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        if skipping > 0 {
            skipping -= 1
            return
        }
        stack.removeLast()
        if stack.isEmpty { closedRoot = true }
        switch elementName {
        case "interface":
            if let interface { interfaces[interface.name] = interface }
            interface = nil
        case "method":
            if let method { interface?.methods.append(method) }
            method = nil
        case "signal":
            if let signal { interface?.signals.append(signal) }
            signal = nil
        default:
            break
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if skipping == 0 && !string.allSatisfy(\.isWhitespace) {
            fail("unexpected text \"\(string.prefix(40))\" inside <\(stack.last ?? "")>", parser)
        }
    }
}
