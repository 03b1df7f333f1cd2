import ConvertSwiftSDK
import ConvertSynchronization
import ConvertTransport
import Foundation

/// A transport that "delivers" every request by appending its body as one line to a file and
/// answering 200: the local endpoint of the quickstart. Any `HTTPTransport` plugs in the same way.
final class BatchFileTransport: HTTPTransport, Sendable {
    private struct State {
        // Behind the lock too, so concurrent sends never interleave their lines.
        let handle: FileHandle?
        var batches = 0
    }

    private let state: Locked<State>

    init(file: URL) {
        _ = FileManager.default.createFile(atPath: file.path, contents: nil, attributes: [.posixPermissions: 0o600])
        state = Locked(State(handle: try? FileHandle(forWritingTo: file)))
    }

    var batchCount: Int { state.withValue { $0.batches } }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        state.withValue { state in
            if let body = request.body {
                state.handle?.write(body)
                state.handle?.write(Data("\n".utf8))
            }
            state.batches += 1
        }
        return HTTPResponse(status: 200)
    }
}
