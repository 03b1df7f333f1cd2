import ConvertEnvironment
import ConvertModel
import ConvertSynchronization
import Foundation

/// A config source driven by the test: it delivers what the test pushes, when it pushes it.
///
/// ```swift
/// let source = StubConfigSource(initial: try Fixtures.data(.cdnConfigBaseline))
/// // later: await source.push(updatedBytes)
/// ```
public final class StubConfigSource: ConfigSource, Sendable {
    private struct State {
        var deliver: (@Sendable (ConfigDocument) async -> Void)?
        var pending: [ConfigDocument] = []
        var failure: (any Error)?
    }

    private let state: Locked<State>

    /// A source that delivers `initial` (if any) as soon as the SDK starts it.
    public init(initial: Data? = nil, origin: ConfigDocument.Origin = .network) {
        state = Locked(State(pending: initial.map { [ConfigDocument(bytes: $0, origin: origin)] } ?? []))
    }

    /// A source whose `run` throws `error`.
    public init(failingWith error: any Error) {
        state = Locked(State(failure: error))
    }

    public func run(deliver: @escaping @Sendable (ConfigDocument) async -> Void) async throws {
        let (queued, failure): ([ConfigDocument], (any Error)?) = state.withValue { state in
            state.deliver = deliver
            defer { state.pending.removeAll() }
            return (state.pending, state.failure)
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
        let deliver: (@Sendable (ConfigDocument) async -> Void)? = state.withValue { state in
            if state.deliver == nil { state.pending.append(document) }
            return state.deliver
        }
        await deliver?(document)
    }
}
