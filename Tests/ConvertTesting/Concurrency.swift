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

/// How a child process ended, and what it printed.
public struct ProcessOutcome: Sendable {
    /// The exit status.
    public let status: Int32
    /// Everything written to standard output.
    public let out: Data
    /// Everything written to standard error.
    public let err: Data
}

extension Process {
    /// Runs the process to its end without holding a thread of Swift's cooperative pool: a test
    /// blocked in `waitUntilExit` holds one of as many threads as the machine has cores, and on
    /// a 2-core machine two such tests stall every other async test. Standard output and error
    /// are read on threads of their own; `input`, when given, is written to standard input,
    /// which is then closed.
    public func outcome(input: Data? = nil) async throws -> ProcessOutcome {
        let stdout = Pipe(), stderr = Pipe(), stdin = Pipe()
        standardOutput = stdout
        standardError = stderr
        if input != nil { standardInput = stdin }
        let outData = Locked(Data()), errData = Locked(Data())
        let readers = DispatchGroup()
        try await withCheckedThrowingContinuation { (ended: CheckedContinuation<Void, any Error>) in
            terminationHandler = { _ in ended.resume() }
            do {
                try run()
            } catch {
                terminationHandler = nil
                ended.resume(throwing: error)
                return
            }
            for (pipe, sink) in [(stdout, outData), (stderr, errData)] {
                readers.enter()
                Thread {
                    sink.set(pipe.fileHandleForReading.readDataToEndOfFile())
                    readers.leave()
                }.start()
            }
            if let input {
                stdin.fileHandleForWriting.write(input)
                try? stdin.fileHandleForWriting.close()
            }
        }
        await withCheckedContinuation { (read: CheckedContinuation<Void, Never>) in
            readers.notify(queue: .global()) { read.resume() }
        }
        return ProcessOutcome(status: terminationStatus, out: outData.value, err: errData.value)
    }
}

extension Duration {
    /// How long a test waits for something that must happen (readiness, a flush, a shutdown's
    /// drain, an awaited condition) before it fails. Swift Testing starts every test at once, so
    /// on a loaded 2-core machine a background task can wait for most of the run before the
    /// cooperative pool gets to it; a bound near the run's own length turns a slow machine into
    /// a red run. A hang still fails, after this long.
    public static let patience: Duration = .seconds(600)
}

/// What ``eventually(_:timeout:_:)`` throws when its condition never held.
public struct NeverHappened: Error, CustomStringConvertible {
    /// What was waited for.
    public let what: String

    /// `timed out waiting for: <what>`.
    public var description: String { "timed out waiting for: \(what)" }
}

/// Polls `condition` every few milliseconds until it holds; throws ``NeverHappened`` after
/// `timeout`, once a last check failed too (a starved test thread may wake past the deadline with
/// the condition long met).
public func eventually(_ what: String, timeout: Duration = .patience, _ condition: () async -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return }
        try await Task.sleep(for: .milliseconds(5))
    }
    if await condition() { return }
    throw NeverHappened(what: what)
}

/// Gives tasks woken by a clock a moment to act, so that a check that nothing happened means
/// something.
public func letTasksRun() async {
    for _ in 0..<50 { await Task.yield() }
    try? await Task.sleep(for: .milliseconds(30))
}
