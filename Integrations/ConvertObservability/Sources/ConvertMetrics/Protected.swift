import Foundation

/// A value behind a lock: every access holds it, which is what makes it `Sendable`
/// (`@unchecked`: the compiler cannot see the lock).
final class Protected<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
