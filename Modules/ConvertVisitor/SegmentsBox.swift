import ConvertJSON
import ConvertSynchronization

/// An immutable box for a visitor's segment values and their string form.
final class SegmentsBox: Sendable {
    let values: [String: JSONValue]
    /// Computed once per box: tracking reads it for every event.
    let segments: VisitorSegments
    init(_ values: [String: JSONValue]) {
        self.values = values
        segments = VisitorSegments(filtering: values)
    }

    /// A shared box for `value`: visitors mostly repeat a few combinations of country, browser
    /// and devices, so one box serves them all instead of ~130 bytes per visitor. The table is
    /// split in stripes chosen by the calling thread's number, so up to 16 threads storing
    /// segments neither queue for one lock nor share one box's reference count (every copy of a
    /// visitor's data counts on its box). A stripe remembers the box it handed out last: the
    /// next visitor mostly has the same values, found there without hashing them.
    static func interned(_ value: [String: JSONValue]) -> SegmentsBox {
        interned(matching: { $0 == value }, value)
    }

    /// ``interned(_:)`` for report values read in place.
    static func interned(_ values: ReportValues) -> SegmentsBox {
        interned(matching: { values.equals($0) }, values.dictionary)
    }

    private static func interned(matching matches: ([String: JSONValue]) -> Bool,
                                 _ value: @autoclosure () -> [String: JSONValue]) -> SegmentsBox {
        let home = stripes[Int(truncatingIfNeeded: currentThreadNumber()) & (stripes.count - 1)]
        if let last = home.last(matching: matches) { return last }
        return home.intern(value())
    }

    private static let stripes = (0..<16).map { _ in Interner() }
}

/// One stripe of the segment box table.
private final class Interner: Sendable {
    private struct Table {
        var boxes: [[String: JSONValue]: SegmentsBox] = [:]
        /// The box last handed out to a thread whose stripe this is.
        var last: SegmentsBox?
    }
    private let table = Locked(Table())

    /// The box last handed out here, when `matches` says its values are the ones wanted.
    func last(matching matches: ([String: JSONValue]) -> Bool) -> SegmentsBox? {
        table.withValue { table in table.last.flatMap { matches($0.values) ? $0 : nil } }
    }

    /// The box for `value`, remembered as the one last handed out.
    func intern(_ value: [String: JSONValue]) -> SegmentsBox {
        table.withValue { table in
            if let box = table.boxes[value] {
                table.last = box
                return box
            }
            // Bounded: a flood of distinct values only costs the sharing, never memory.
            if table.boxes.count >= 1024 { table.boxes.removeAll(keepingCapacity: true) }
            let box = SegmentsBox(value)
            table.boxes[value] = box
            table.last = box
            return box
        }
    }
}
