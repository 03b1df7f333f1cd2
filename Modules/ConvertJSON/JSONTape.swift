/// A parsed document as one flat list of values in document order, each container followed by
/// its contents (an object's as key, value, key, value, …), plus the strings that needed
/// decoding. Plain ASCII strings stay spans of the source bytes, so reading a document costs no
/// allocation per value; ``JSONValue``s are built only for the parts a reader keeps.
package struct JSONTape {
    /// One value: its kind and two words whose meaning depends on it.
    struct Node {
        enum Kind: UInt8 {
            case null, `false`, `true`, number
            /// A string that is the source bytes `[first, second)` as they stand (ASCII, no escapes).
            case span
            /// A string that needed decoding: `strings[first]`.
            case decoded
            /// `first` elements or members; the container's contents end before node `second`.
            case array, object
        }

        var kind: Kind
        var first: Int
        var second: Int

        static func number(_ value: Double) -> Node {
            Node(kind: .number, first: Int(bitPattern: UInt(value.bitPattern)), second: 0)
        }

        var number: Double { Double(bitPattern: UInt64(UInt(bitPattern: first))) }
    }

    let nodes: [Node]
    let strings: [String]

    /// Parses one JSON document as ``JSONParser/parse(_:)`` does, with the same errors.
    package init(parsing bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) {
        (nodes, strings) = try JSONParser.parseTape(buffer: bytes)
    }

    /// Calls `body` with the document's top value; `bytes` must be the bytes it was parsed from,
    /// and the value must not be used after `body` returns.
    package func withRoot<R, E: Error>(bytes: UnsafeBufferPointer<UInt8>,
                                       _ body: (JSONNode) throws(E) -> R) throws(E) -> R {
        try nodes.withUnsafeBufferPointer { nodes throws(E) -> R in
            try strings.withUnsafeBufferPointer { strings throws(E) -> R in
                try body(JSONNode(nodes: nodes.baseAddress!, strings: strings.baseAddress, bytes: bytes.baseAddress,
                                  index: 0))
            }
        }
    }
}

/// One value of a ``JSONTape``, borrowed: valid only inside ``JSONTape/withRoot(bytes:_:)``.
package struct JSONNode: JSONDocumentValue {
    private let nodes: UnsafePointer<JSONTape.Node>
    private let strings: UnsafePointer<String>?
    private let bytes: UnsafePointer<UInt8>?
    private let index: Int

    fileprivate init(nodes: UnsafePointer<JSONTape.Node>, strings: UnsafePointer<String>?, bytes: UnsafePointer<UInt8>?,
                     index: Int) {
        self.nodes = nodes
        self.strings = strings
        self.bytes = bytes
        self.index = index
    }

    private func node(_ i: Int) -> JSONNode {
        JSONNode(nodes: nodes, strings: strings, bytes: bytes, index: i)
    }

    /// This value's JSON type.
    package var jsonKind: JSONKind {
        switch nodes[index].kind {
        case .null: return .null
        case .false, .true: return .bool
        case .number: return .number
        case .span, .decoded: return .string
        case .array: return .array
        case .object: return .object
        }
    }

    /// Whether this is `null`.
    package var isNull: Bool { nodes[index].kind == .null }

    /// The boolean payload, if this is a boolean.
    package var boolValue: Bool? {
        switch nodes[index].kind {
        case .false: return false
        case .true: return true
        default: return nil
        }
    }

    /// The numeric payload, if this is a number.
    package var numberValue: Double? {
        let n = nodes[index]
        return n.kind == .number ? n.number : nil
    }

    /// The string payload, if this is a string.
    package var stringValue: String? { Self.string(nodes[index], strings, bytes) }

    private static func string(_ n: JSONTape.Node, _ strings: UnsafePointer<String>?,
                               _ bytes: UnsafePointer<UInt8>?) -> String? {
        switch n.kind {
        case .span: return String(decoding: UnsafeBufferPointer(start: bytes! + n.first, count: n.second - n.first),
                                  as: UTF8.self)
        case .decoded: return strings![n.first]
        default: return nil
        }
    }

    /// The index of the node after this value and its contents.
    private func end(_ i: Int) -> Int {
        let n = nodes[i]
        return n.kind == .array || n.kind == .object ? n.second : i + 1
    }

    /// The member named `key`, if this is an object that has it; of repeated keys the last wins,
    /// as in the ``JSONValue`` the parser builds.
    package func member(_ key: String) -> JSONNode? {
        let container = nodes[index]
        guard container.kind == .object else { return nil }
        return key.withBorrowedUTF8 { key -> JSONNode? in
            var found: Int?
            var k = index + 1
            for _ in 0..<container.first {
                if keyEquals(k, key) { found = k + 1 }
                k = end(k + 1)
            }
            return found.map(node)
        }
    }

    private func keyEquals(_ k: Int, _ key: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = nodes[k]
        if n.kind == .span {
            // Plain ASCII: equal as strings exactly when equal as bytes.
            let count = n.second - n.first
            return count == key.count && (count == 0 || memoryEquals(bytes! + n.first, key.baseAddress!, count))
        }
        return strings![n.first] == String(decoding: key, as: UTF8.self)
    }

    private func memoryEquals(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        for i in 0..<count where a[i] != b[i] { return false }
        return true
    }

    /// The elements, if this is an array.
    package var arrayElements: Elements? {
        let n = nodes[index]
        guard n.kind == .array else { return nil }
        return Elements(array: self, count: n.first)
    }

    /// The elements of an array, in order.
    package struct Elements: Sequence, IteratorProtocol {
        private var upcoming: JSONNode
        private var remaining: Int

        fileprivate init(array: JSONNode, count: Int) {
            upcoming = array.node(array.index + 1)
            remaining = count
        }

        /// The element after the last one returned.
        package mutating func next() -> JSONNode? {
            guard remaining > 0 else { return nil }
            remaining -= 1
            let element = upcoming
            upcoming = element.node(element.end(element.index))
            return element
        }
    }

    /// This value and its contents as a ``JSONValue``, as ``JSONParser/parse(_:)`` builds it.
    package var json: JSONValue { value(at: index).value }

    private func value(at i: Int) -> (value: JSONValue, next: Int) {
        let n = nodes[i]
        switch n.kind {
        case .null: return (.null, i + 1)
        case .false: return (.bool(false), i + 1)
        case .true: return (.bool(true), i + 1)
        case .number: return (.number(n.number), i + 1)
        case .span, .decoded: return (.string(Self.string(n, strings, bytes)!), i + 1)
        case .array:
            var elements: [JSONValue] = []
            elements.reserveCapacity(n.first)
            var e = i + 1
            for _ in 0..<n.first {
                let (element, next) = value(at: e)
                elements.append(element)
                e = next
            }
            return (.array(elements), e)
        case .object:
            // Built once at its final size; a repeated key keeps its last value, as JSON.parse does.
            var object = [String: JSONValue](minimumCapacity: n.first)
            var k = i + 1
            for _ in 0..<n.first {
                let (member, next) = value(at: k + 1)
                object[Self.string(nodes[k], strings, bytes)!] = member
                k = next
            }
            return (.object(object), k)
        }
    }
}
