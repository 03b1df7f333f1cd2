import Foundation

/// A value shared between tasks and callbacks in tests, behind a lock.
///
/// ```swift
/// let seen = Locked<[String]>([])
/// sdk.on(.bucketing) { _ in seen.withValue { $0.append("b") } }
/// ```
public final class Locked<Value>: @unchecked Sendable {
    // `stored` is guarded by `lock`.
    private let lock = NSLock()
    private var stored: Value

    public init(_ value: Value) { stored = value }

    /// The current value.
    public var value: Value { lock.withLock { stored } }

    /// Replaces the value.
    public func set(_ value: Value) { lock.withLock { stored = value } }

    /// Changes the value in place, atomically.
    @discardableResult
    public func withValue<Result>(_ body: (inout Value) -> Result) -> Result { lock.withLock { body(&stored) } }
}

/// A thread-safe counter for tests.
public final class Counter: @unchecked Sendable {
    private let count = Locked(0)

    public init() {}

    public func increment() { count.withValue { $0 += 1 } }
    public var value: Int { count.value }
}

/// Executables this package builds beside its tests (the CLI, the benchmark, test helpers).
public enum BuiltProducts {
    /// The URL of the built executable `name`, looked up next to the running test binary.
    public static func executable(_ name: String) -> URL? {
        let candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(), Bundle.main.bundleURL]
            + Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent() }
        return candidates.flatMap { [$0, $0.deletingLastPathComponent()] }
            .map { $0.appendingPathComponent(name) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }
}
