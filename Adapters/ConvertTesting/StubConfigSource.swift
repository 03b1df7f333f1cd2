import ConvertModel
import Foundation

/// A config source driven by the test: it delivers what the test pushes, when it pushes it.
///
/// ```swift
/// let source = StubConfigSource(initial: try Fixtures.data(.cdnConfigBaseline))
/// // later: await source.push(updatedBytes)
/// ```
public final class StubConfigSource: ConfigSource, @unchecked Sendable {
    // `deliver`, `pending` and `failure` are guarded by `lock`.
    private let lock = NSLock()
    private var deliver: (@Sendable (ConfigDocument) async -> Void)?
    private var pending: [ConfigDocument] = []
    private var failure: (any Error)?

    /// A source that delivers `initial` (if any) as soon as the SDK starts it.
    public init(initial: Data? = nil, origin: ConfigDocument.Origin = .network) {
        if let initial { pending.append(ConfigDocument(bytes: initial, origin: origin)) }
    }

    /// A source whose `run` throws `error`.
    public init(failingWith error: any Error) {
        failure = error
    }

    public func run(deliver: @escaping @Sendable (ConfigDocument) async -> Void) async throws {
        let (queued, failure): ([ConfigDocument], (any Error)?) = lock.withLock {
            self.deliver = deliver
            defer { pending.removeAll() }
            return (pending, self.failure)
        }
        if let failure { throw failure }
        for document in queued { await deliver(document) }
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
    }

    /// Delivers `bytes` now (or as soon as the SDK starts the source).
    public func push(_ bytes: Data, origin: ConfigDocument.Origin = .network) async {
        let document = ConfigDocument(bytes: bytes, origin: origin)
        let deliver: (@Sendable (ConfigDocument) async -> Void)? = lock.withLock {
            if self.deliver == nil { pending.append(document) }
            return self.deliver
        }
        await deliver?(document)
    }
}
