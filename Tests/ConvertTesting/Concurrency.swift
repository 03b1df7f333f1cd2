import ConvertSynchronization
import Foundation

/// A thread-safe counter for tests.
public final class Counter: Sendable {
    private let count = Locked(0)

    /// A counter at zero.
    public init() {}

    /// Adds one, from any thread.
    public func increment() { count.withValue { $0 += 1 } }
    /// The count so far.
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
