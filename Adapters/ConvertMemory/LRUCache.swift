/// A fixed-capacity map that forgets its least recently used entry when full.
/// Every operation is O(1): a dictionary of slots plus an intrusive doubly linked list.
public struct LRUCache<Key: Hashable, Value> {
    private struct Slot {
        var key: Key
        var value: Value
        var prev: Int
        var next: Int
    }

    /// The most entries kept.
    public let capacity: Int
    private var slotByKey: [Key: Int] = [:]
    private var slots: [Slot] = []
    private var head = -1  // most recent
    private var tail = -1  // least recent

    /// Creates a cache keeping at most `capacity` entries (at least 1).
    public init(capacity: Int) {
        self.capacity = max(1, capacity)
        slotByKey.reserveCapacity(min(self.capacity, 1 << 20))
    }

    /// The number of entries.
    public var count: Int { slotByKey.count }

    /// The value for `key`, marking it most recently used.
    public mutating func value(for key: Key) -> Value? {
        guard let index = slotByKey[key] else { return nil }
        moveToFront(index)
        return slots[index].value
    }

    /// The value for `key` without changing recency.
    public func peek(_ key: Key) -> Value? {
        slotByKey[key].map { slots[$0].value }
    }

    /// Stores `value` under `key` as most recently used; returns the entry evicted to make room.
    @discardableResult
    public mutating func set(_ value: Value, for key: Key) -> (key: Key, value: Value)? {
        if let index = slotByKey[key] {
            slots[index].value = value
            moveToFront(index)
            return nil
        }
        if slots.count < capacity {
            slots.append(Slot(key: key, value: value, prev: -1, next: -1))
            let index = slots.count - 1
            slotByKey[key] = index
            linkAtFront(index)
            return nil
        }
        let victim = tail
        let evicted = (slots[victim].key, slots[victim].value)
        unlink(victim)
        slotByKey[evicted.0] = nil
        slots[victim] = Slot(key: key, value: value, prev: -1, next: -1)
        slotByKey[key] = victim
        linkAtFront(victim)
        return evicted
    }

    /// Changes the value for `key` in place (starting from `initial` for a new key, which is
    /// stored only when `keep` says so), marking it most recently used; one hash lookup.
    public mutating func modify<Result>(_ key: Key, initial: () -> Value, keep: (Value) -> Bool,
                                        _ body: (inout Value) -> Result) -> Result {
        if let index = slotByKey[key] {
            moveToFront(index)
            return body(&slots[index].value)
        }
        var value = initial()
        let result = body(&value)
        if keep(value) { set(value, for: key) }
        return result
    }

    /// Keys from most to least recently used.
    public var keysByRecency: [Key] {
        var out: [Key] = []
        var i = head
        while i != -1 {
            out.append(slots[i].key)
            i = slots[i].next
        }
        return out
    }

    private mutating func moveToFront(_ index: Int) {
        guard index != head else { return }
        unlink(index)
        linkAtFront(index)
    }

    private mutating func unlink(_ index: Int) {
        let prev = slots[index].prev, next = slots[index].next
        if prev != -1 { slots[prev].next = next } else { head = next }
        if next != -1 { slots[next].prev = prev } else { tail = prev }
        slots[index].prev = -1
        slots[index].next = -1
    }

    private mutating func linkAtFront(_ index: Int) {
        slots[index].next = head
        slots[index].prev = -1
        if head != -1 { slots[head].prev = index }
        head = index
        if tail == -1 { tail = index }
    }
}
