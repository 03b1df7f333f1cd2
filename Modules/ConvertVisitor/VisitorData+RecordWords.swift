/// A record's counts and words. Up to ``inlineCapacity`` words (most visitors: a decision or
/// two and the locations matched) live in the value itself, so reading a record from a store
/// touches no buffer of its own; larger records spill to an array.
struct RecordWords: Sendable, Equatable {
    static let inlineCapacity = 5

    // Inline: 0 when empty, else 1 << 31 | pairs | goals << 8 | locations << 16.
    private var head: UInt32 = 0
    private var inline: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0, 0)
    // When set: [pairs, goals, locations, words…], and `head` is 0.
    private var spilled: ContiguousArray<UInt32>?

    var isEmpty: Bool {
        if let spilled { return spilled[0] | spilled[1] | spilled[2] == 0 }
        return head == 0
    }

    func count(_ section: Int) -> Int {
        if let spilled { return Int(spilled[section]) }
        return Int(head >> UInt32(8 * section) & 0xFF)
    }

    /// The number of words in all sections.
    var total: Int { 2 * count(0) + count(1) + count(2) }

    subscript(_ i: Int) -> UInt32 {
        get {
            if let spilled { return spilled[3 + i] }
            precondition(i >= 0 && i < Self.inlineCapacity)
            return withUnsafeBytes(of: inline) { $0.load(fromByteOffset: 4 * i, as: UInt32.self) }
        }
        set {
            if spilled != nil {
                spilled![3 + i] = newValue
                return
            }
            precondition(i >= 0 && i < Self.inlineCapacity)
            withUnsafeMutableBytes(of: &inline) { $0.storeBytes(of: newValue, toByteOffset: 4 * i, as: UInt32.self) }
        }
    }

    /// Inserts one entry of `section` (one word, or a pair when `second` is given) at word `i`.
    mutating func insert(_ first: UInt32, _ second: UInt32? = nil, at i: Int, into section: Int) {
        let width = second == nil ? 1 : 2
        let total = self.total
        if spilled == nil, total + width <= Self.inlineCapacity {
            withUnsafeMutableBytes(of: &inline) { raw in
                let w = raw.bindMemory(to: UInt32.self)
                var j = total - 1
                while j >= i {
                    w[j + width] = w[j]
                    j -= 1
                }
                w[i] = first
                if let second { w[i + 1] = second }
            }
            head = (head | 1 << 31) + 1 << UInt32(8 * section)
            return
        }
        spill(extra: width)
        if let second {
            spilled!.insert(contentsOf: [first, second], at: 3 + i)
        } else {
            spilled!.insert(first, at: 3 + i)
        }
        spilled![section] += 1
    }

    /// Removes one entry of `section`, `width` words at word `i`.
    mutating func remove(at i: Int, width: Int, from section: Int) {
        let total = self.total
        if spilled != nil {
            spilled!.removeSubrange((3 + i)..<(3 + i + width))
            spilled![section] -= 1
            if total - width <= Self.inlineCapacity { unspill() }
            return
        }
        withUnsafeMutableBytes(of: &inline) { raw in
            let w = raw.bindMemory(to: UInt32.self)
            for j in i..<(total - width) { w[j] = w[j + width] }
            for j in (total - width)..<total { w[j] = 0 }
        }
        head -= 1 << UInt32(8 * section)
        if head == 1 << 31 { head = 0 }
    }

    mutating func reserve(extra: Int) {
        let needed = total + extra
        if let capacity = spilled?.capacity {
            if capacity < 3 + needed { spilled!.reserveCapacity(3 + needed) }
        } else if needed > Self.inlineCapacity {
            spill(extra: extra)
        }
    }

    /// Moves inline words to an array with room for `extra` more.
    private mutating func spill(extra: Int) {
        guard spilled == nil else { return }
        let total = self.total
        var array = ContiguousArray<UInt32>()
        array.reserveCapacity(3 + total + extra)
        array.append(contentsOf: [UInt32(count(0)), UInt32(count(1)), UInt32(count(2))])
        for i in 0..<total { array.append(self[i]) }
        self = RecordWords()
        spilled = array
    }

    /// Moves the words of an array back inline (or to empty) once they fit.
    private mutating func unspill() {
        guard let array = spilled else { return }
        self = RecordWords()
        guard array[0] | array[1] | array[2] != 0 else { return }
        head = 1 << 31 | array[0] | array[1] << 8 | array[2] << 16
        for i in 0..<(array.count - 3) { self[i] = array[3 + i] }
    }

    static func == (lhs: RecordWords, rhs: RecordWords) -> Bool {
        guard lhs.count(0) == rhs.count(0), lhs.count(1) == rhs.count(1), lhs.count(2) == rhs.count(2) else { return false }
        for i in 0..<lhs.total where lhs[i] != rhs[i] { return false }
        return true
    }

    func hash(into hasher: inout Hasher) {
        let total = self.total
        hasher.combine(total)
        for section in 0..<3 { hasher.combine(count(section)) }
        for i in 0..<total { hasher.combine(self[i]) }
    }
}
