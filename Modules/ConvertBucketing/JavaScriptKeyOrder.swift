/// The order in which JavaScript enumerates an object's own string keys.
@usableFromInline package enum JavaScriptKeyOrder {
    /// Whether `key` is an array index: a canonical non-negative integer below 2^32 - 1
    /// (`"0"`, `"17"`; not `"017"`, `"-1"`, `"1.0"`).
    @usableFromInline package static func arrayIndex(_ key: String) -> UInt32? {
        let bytes = key.utf8
        guard let first = bytes.first, bytes.count <= 10 else { return nil }
        if first == UInt8(ascii: "0") { return bytes.count == 1 ? 0 : nil }
        var value: UInt64 = 0
        for byte in bytes {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            value = value * 10 + UInt64(byte - 0x30)
        }
        return value < 4_294_967_295 ? UInt32(value) : nil
    }

    /// Sorts elements by their key as JS would enumerate them: array-index keys ascending first,
    /// then the other keys in their original order.
    @usableFromInline package static func sorted<Element>(_ elements: [Element], id: (Element) -> String) -> [Element] {
        var indexed: [(UInt32, Element)] = []
        var others: [Element] = []
        for element in elements {
            if let index = arrayIndex(id(element)) {
                indexed.append((index, element))
            } else {
                others.append(element)
            }
        }
        indexed.sort { $0.0 < $1.0 }
        return indexed.map(\.1) + others
    }
}
